package discordio

import (
	"reflect"
	"testing"

	djson "github.com/disgoorg/json/v2"

	"github.com/pinbot/pinbot/bot/internal/fastjson"
)

func TestInstallDecoder(t *testing.T) {
	InstallDecoder()
	InstallDecoder() // a second call changes nothing
	if reflect.ValueOf(djson.Unmarshal).Pointer() != reflect.ValueOf(fastjson.Unmarshal).Pointer() {
		t.Fatal("InstallDecoder did not route disgo's decoding through go-json")
	}
}
