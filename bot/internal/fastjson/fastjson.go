// Package fastjson makes disgo decode Discord's JSON with
// github.com/goccy/go-json instead of encoding/json.
//
// disgo decodes every gateway event and REST response through the
// package-level function github.com/disgoorg/json/v2.Unmarshal, and its
// types unmarshal themselves in layers (the gateway envelope, then the
// event, then the interaction, then its data), each layer calling Unmarshal
// again on part of the input. encoding/json validates the whole input on
// every call, so a payload is scanned once per layer; go-json does not
// (BenchmarkDecodeInteraction; the figures are in docs/benchmarks.md). A
// shard's events are decoded one at a time, so that time bounds how fast a
// burst of commands is acknowledged.
//
// Unmarshal also turns a panic inside a type's UnmarshalJSON into an
// error. disgo has such panics on some malformed input (an action row
// inside an action row panics on an interface conversion); as an error, the
// REST call fails, or disgo's gateway logs it and reconnects, instead of the
// process dying.
//
// Only decoding changes. disgo's request bodies rely on the omitzero tag
// option, which go-json does not implement, so encoding stays with
// encoding/json. The tests check that both decoders produce the same values
// from the payloads the stand-in and Discord's documentation give, and fuzz
// them against each other.
package fastjson

import (
	"fmt"

	djson "github.com/disgoorg/json/v2"
	gojson "github.com/goccy/go-json"
)

// Install routes disgo's decoding through Unmarshal. It sets a package-level
// variable that disgo reads without synchronization, so it must run before
// any goroutine uses disgo: the bot calls it once, through
// discordio.InstallDecoder, from bot.New.
func Install() {
	djson.Unmarshal = Unmarshal
}

// Unmarshal decodes data into v with go-json, returning as an error any
// panic raised while decoding.
func Unmarshal(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("fastjson: decoding %T panicked: %v", v, r)
		}
	}()
	return gojson.Unmarshal(data, v)
}
