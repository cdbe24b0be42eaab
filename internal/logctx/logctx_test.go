package logctx

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestLoggerTagsLinesWithTheContextsIDs(t *testing.T) {
	var buf bytes.Buffer
	base := zerolog.New(&buf).With().Str("component", "c").Logger()
	ctx := With(context.Background(), InteractionID, "1")
	ctx = With(ctx, JobID, "7")
	ctx = With(ctx, InteractionID, "2") // replaces
	ctx = With(ctx, RequestID, "")      // ignored
	Logger(ctx, base).Info().Msg("x")
	want := `{"level":"info","component":"c","job":"7","interaction_id":"2","message":"x"}` + "\n"
	if got := buf.String(); got != want {
		t.Fatalf("line %s, want %s", got, want)
	}
	if got := Value(ctx, InteractionID); got != "2" {
		t.Errorf("Value = %q, want 2", got)
	}
	if got := Value(ctx, RequestID); got != "" {
		t.Errorf("Value(request_id) = %q, want empty", got)
	}
}

func TestLoggerWithoutIDsIsTheSameLogger(t *testing.T) {
	var buf bytes.Buffer
	Logger(context.Background(), zerolog.New(&buf)).Info().Msg("x")
	if got := buf.String(); strings.Contains(got, InteractionID) {
		t.Fatalf("line %s has an ID", got)
	}
}

func TestInheritCopiesIDsOnly(t *testing.T) {
	type k struct{}
	dst, cancel := context.WithCancel(context.WithValue(context.Background(), k{}, "dst"))
	src := With(context.Background(), InteractionID, "9")
	got := Inherit(dst, src)
	if Value(got, InteractionID) != "9" || got.Value(k{}) != "dst" {
		t.Fatalf("Inherit lost dst's values or src's IDs")
	}
	cancel()
	if got.Err() == nil {
		t.Fatalf("Inherit did not keep dst's cancellation")
	}
}
