package bot

import (
	"context"
	"reflect"
	"testing"

	djson "github.com/disgoorg/json/v2"

	"github.com/pinbot/pinbot/bot/internal/fastjson"
)

// TestNewInstallsDecoder: New, not importing the package, makes disgo
// decode with go-json (see discordio.InstallDecoder).
func TestNewInstallsDecoder(t *testing.T) {
	b, err := New(Config{Token: "MTIwMDAwMDAwMDAwMDAwMDAwMA.x.y", Engine: nonNilEngine, Links: nonNilLinks, Pinterest: nonNilPinterest})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close(context.Background()) }()
	if reflect.ValueOf(djson.Unmarshal).Pointer() != reflect.ValueOf(fastjson.Unmarshal).Pointer() {
		t.Fatal("after New, disgo still decodes with encoding/json")
	}
}
