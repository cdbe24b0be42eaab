package bot

import "github.com/pinbot/pinbot/bot/internal/fastjson"

// disgo decodes every gateway event and REST response with go-json instead
// of encoding/json (see package fastjson): a burst of commands on one shard
// is acknowledged that much sooner.
func init() { fastjson.Install() }
