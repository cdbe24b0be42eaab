package discordio

import (
	"sync"

	"github.com/pinbot/pinbot/bot/internal/fastjson"
)

// installDecoder guards InstallDecoder's one write.
var installDecoder sync.Once

// InstallDecoder makes disgo decode every gateway event and REST response
// with go-json instead of encoding/json (see package fastjson for why).
// Only the first call acts; every call returns after that one is done.
//
// It changes a process-wide setting because disgo v0.19.6 offers no other:
// its clients and its types' UnmarshalJSON methods all decode through the
// package-level variable github.com/disgoorg/json/v2.Unmarshal, with no
// client option in its place. disgo reads that variable without
// synchronization, so the write must come before any goroutine decodes
// with disgo: bot.New calls InstallDecoder before it builds its client,
// and the sync.Once orders every later Bot's goroutines after the write.
func InstallDecoder() { installDecoder.Do(fastjson.Install) }
