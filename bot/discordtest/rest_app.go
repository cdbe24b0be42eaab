package discordtest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// Command is an application command the bot registered.
type Command struct {
	// ID is the command's ID; it survives bulk overwrites that keep the
	// command's name and type, as on Discord.
	ID snowflake.ID
	// GuildID is the guild of a guild command, zero for a global one.
	GuildID snowflake.ID
	// Type is the command type.
	Type discord.ApplicationCommandType
	// Name and Description are the command's.
	Name, Description string
	// Version changes on every update.
	Version snowflake.ID
	// Definition is the command as the bot sent it.
	Definition json.RawMessage
}

// CommandSync is one bulk overwrite of commands.
type CommandSync struct {
	// GuildID is the guild overwritten, zero for global commands.
	GuildID snowflake.ID
	// At is when it happened, on the server's clock.
	At time.Time
	// Names are the names of the commands, in the order sent.
	Names []string
}

// appState holds the application's commands, guarded by Server.mu.
type appState struct {
	commands []*Command
	syncs    []CommandSync
}

func (a *appState) find(guildID snowflake.ID, name string, typ discord.ApplicationCommandType) *Command {
	for _, c := range a.commands {
		if c.GuildID == guildID && c.Name == name && c.Type == typ {
			return c
		}
	}
	return nil
}

// Commands returns the commands registered for a guild, or the global ones
// for guild ID zero.
func (s *Server) Commands(guildID snowflake.ID) []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Command
	for _, c := range s.app.commands {
		if c.GuildID == guildID {
			cc := *c
			cc.Definition = slices.Clone(c.Definition)
			out = append(out, cc)
		}
	}
	return out
}

// CommandSyncs returns every bulk overwrite of commands, in order.
func (s *Server) CommandSyncs() []CommandSync {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.app.syncs)
	for i := range out {
		out[i].Names = slices.Clone(out[i].Names)
	}
	return out
}

func (s *Server) handleGetGateway(_ *restRequest) restResponse {
	return okJSON(map[string]string{"url": s.GatewayURL()})
}

func (s *Server) handleGetGatewayBot(_ *restRequest) restResponse {
	return okJSON(map[string]any{
		"url":    s.GatewayURL(),
		"shards": s.cfg.shards,
		"session_start_limit": map[string]int{
			"total":           1000,
			"remaining":       s.gw.startRemaining,
			"reset_after":     int(24 * time.Hour / time.Millisecond),
			"max_concurrency": s.cfg.maxConcurrency,
		},
	})
}

func (s *Server) handleGetCurrentUser(rq *restRequest) restResponse {
	if u, ok := s.bearerUserLocked(rq.r); ok {
		return oauth2Me(u)
	}
	return okJSON(wireSelfUser{wireUser: s.botUser.wire(), Verified: true})
}

func (s *Server) handleGetUser(rq *restRequest) restResponse {
	id, err := snowflake.Parse(rq.params["user.id"])
	if err != nil {
		return unknown(10013, "Unknown User")
	}
	u, ok := s.users[id]
	if !ok {
		return unknown(10013, "Unknown User")
	}
	return okJSON(u.wire())
}

func (s *Server) handleGetApplication(_ *restRequest) restResponse {
	bot := s.botUser.wire()
	owner := (&userInfo{ID: s.cfg.applicationID + 1, Username: "owner"}).wire()
	return okJSON(map[string]any{
		"id":                                s.cfg.applicationID,
		"name":                              s.botUser.Username,
		"icon":                              nil,
		"description":                       "",
		"summary":                           "",
		"type":                              nil,
		"bot_public":                        true,
		"bot_require_code_grant":            false,
		"verify_key":                        randomHex(32),
		"flags":                             s.cfg.appFlags,
		"hook":                              true,
		"redirect_uris":                     []string{},
		"interactions_endpoint_url":         nil,
		"role_connections_verification_url": nil,
		"tags":                              []string{},
		"owner":                             owner,
		"team":                              nil,
		"bot":                               bot,
		"approximate_guild_count":           len(s.guilds),
		"integration_types_config":          map[string]any{"0": map[string]any{}},
	})
}

// commandScope checks a command route's application and guild.
func (s *Server) commandScope(rq *restRequest) (snowflake.ID, *restResponse) {
	if rq.params["application.id"] != s.cfg.applicationID.String() {
		rs := apiErr(http.StatusForbidden, 50001, "Missing Access")
		return 0, &rs
	}
	raw, ok := rq.params["guild.id"]
	if !ok {
		return 0, nil
	}
	id, err := snowflake.Parse(raw)
	if err != nil {
		rs := unknown(10004, "Unknown Guild")
		return 0, &rs
	}
	if _, ok := s.guilds[id]; !ok {
		rs := apiErr(http.StatusForbidden, 50001, "Missing Access")
		return 0, &rs
	}
	return id, nil
}

func (s *Server) handleGetCommands(rq *restRequest) restResponse {
	guildID, errRs := s.commandScope(rq)
	if errRs != nil {
		return *errRs
	}
	out := []json.RawMessage{}
	for _, c := range s.app.commands {
		if c.GuildID == guildID {
			out = append(out, s.wireCommandLocked(c))
		}
	}
	return okJSON(out)
}

// handleSetCommands is the bulk overwrite: the commands sent replace all
// commands of the scope. Commands keeping their name and type keep their
// ID.
func (s *Server) handleSetCommands(rq *restRequest) restResponse {
	guildID, errRs := s.commandScope(rq)
	if errRs != nil {
		return *errRs
	}
	var defs []json.RawMessage
	if err := json.Unmarshal(rq.body, &defs); err != nil {
		return invalidJSON()
	}
	parsed := make([]commandDef, 0, len(defs))
	counts := map[discord.ApplicationCommandType]int{}
	for i, raw := range defs {
		d, problem := parseCommandDef(raw)
		if problem != "" {
			return invalidForm(map[string]any{strconv.Itoa(i): formError("APPLICATION_COMMAND_INVALID", problem)})
		}
		for _, p := range parsed {
			if p.Name == d.Name && p.Type == d.Type {
				return invalidForm(map[string]any{strconv.Itoa(i): formError("APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique")})
			}
		}
		counts[d.Type]++
		parsed = append(parsed, d)
	}
	if counts[discord.ApplicationCommandTypeSlash] > 100 || counts[discord.ApplicationCommandTypeUser] > 15 ||
		counts[discord.ApplicationCommandTypeMessage] > 15 {
		return apiErr(http.StatusBadRequest, 30032, "Maximum number of application commands reached")
	}

	kept := s.app.commands[:0:0]
	for _, c := range s.app.commands {
		if c.GuildID != guildID {
			kept = append(kept, c)
		}
	}
	var fresh []*Command
	sync := CommandSync{GuildID: guildID, At: rq.now, Names: make([]string, 0, len(parsed))}
	for _, d := range parsed {
		c := &Command{GuildID: guildID, Type: d.Type, Name: d.Name, Description: d.Description, Definition: d.raw}
		if old := s.app.find(guildID, d.Name, d.Type); old != nil {
			c.ID = old.ID
		} else {
			c.ID = s.newIDLocked(rq.now)
		}
		c.Version = s.newIDLocked(rq.now)
		fresh = append(fresh, c)
		sync.Names = append(sync.Names, d.Name)
	}
	s.app.commands = append(kept, fresh...)
	s.app.syncs = append(s.app.syncs, sync)
	out := make([]json.RawMessage, 0, len(fresh))
	for _, c := range fresh {
		out = append(out, s.wireCommandLocked(c))
	}
	return okJSON(out)
}

// handleCreateCommand creates a command, or updates the one with the same
// name and type (200 instead of 201).
func (s *Server) handleCreateCommand(rq *restRequest) restResponse {
	guildID, errRs := s.commandScope(rq)
	if errRs != nil {
		return *errRs
	}
	d, problem := parseCommandDef(rq.body)
	if problem == "invalid JSON" {
		return invalidJSON()
	}
	if problem != "" {
		return invalidForm(formError("APPLICATION_COMMAND_INVALID", problem))
	}
	if old := s.app.find(guildID, d.Name, d.Type); old != nil {
		old.Description, old.Definition = d.Description, d.raw
		old.Version = s.newIDLocked(rq.now)
		return okJSON(s.wireCommandLocked(old))
	}
	c := &Command{
		ID: s.newIDLocked(rq.now), GuildID: guildID, Type: d.Type, Name: d.Name,
		Description: d.Description, Definition: d.raw,
	}
	c.Version = s.newIDLocked(rq.now)
	s.app.commands = append(s.app.commands, c)
	return created(s.wireCommandLocked(c))
}

// commandDef is a command definition as sent.
type commandDef struct {
	Type        discord.ApplicationCommandType `json:"type"`
	Name        string                         `json:"name"`
	Description string                         `json:"description"`
	Options     []optionDef                    `json:"options"`
	raw         json.RawMessage
}

type optionDef struct {
	Type        discord.ApplicationCommandOptionType `json:"type"`
	Name        string                               `json:"name"`
	Description string                               `json:"description"`
	Required    bool                                 `json:"required"`
	Options     []optionDef                          `json:"options"`
}

// parseCommandDef decodes and checks a command definition the way Discord
// does, returning a problem description if it is invalid.
func parseCommandDef(raw json.RawMessage) (commandDef, string) {
	var d commandDef
	if err := json.Unmarshal(raw, &d); err != nil {
		return d, "invalid JSON"
	}
	d.raw = slices.Clone(raw)
	if d.Type == 0 {
		d.Type = discord.ApplicationCommandTypeSlash
	}
	switch d.Type {
	case discord.ApplicationCommandTypeSlash:
		if !validChatInputName(d.Name) {
			return d, "Command name is invalid"
		}
		if n := utf8.RuneCountInString(d.Description); n < 1 || n > 100 {
			return d, "Command description must be 1-100 characters"
		}
		if problem := checkOptions(d.Options, 0); problem != "" {
			return d, problem
		}
	case discord.ApplicationCommandTypeUser, discord.ApplicationCommandTypeMessage:
		if n := utf8.RuneCountInString(d.Name); n < 1 || n > 32 {
			return d, "Command name is invalid"
		}
		if d.Description != "" {
			return d, "Context menu commands cannot have a description"
		}
		if len(d.Options) > 0 {
			return d, "Context menu commands cannot have options"
		}
	case discord.ApplicationCommandTypePrimaryEntryPoint:
	default:
		return d, "Invalid command type"
	}
	return d, ""
}

// checkOptions checks option names, descriptions and that required options
// come first.
func checkOptions(opts []optionDef, depth int) string {
	if len(opts) > 25 {
		return "Commands have at most 25 options"
	}
	seenOptional := false
	for _, o := range opts {
		if !validChatInputName(o.Name) {
			return "Option name " + o.Name + " is invalid"
		}
		if n := utf8.RuneCountInString(o.Description); n < 1 || n > 100 {
			return "Option description must be 1-100 characters"
		}
		switch o.Type {
		case discord.ApplicationCommandOptionTypeSubCommand, discord.ApplicationCommandOptionTypeSubCommandGroup:
			if depth > 1 {
				return "Sub-commands nest at most two levels"
			}
			if p := checkOptions(o.Options, depth+1); p != "" {
				return p
			}
			continue
		}
		if o.Required && seenOptional {
			return "Required options must be placed before non-required options"
		}
		if !o.Required {
			seenOptional = true
		}
	}
	return ""
}

// validChatInputName reports whether a name suits a slash command or
// option: 1-32 lowercase letters, digits, '-' or '_'.
func validChatInputName(name string) bool {
	n := utf8.RuneCountInString(name)
	if n < 1 || n > 32 {
		return false
	}
	for _, r := range name {
		switch {
		case r == '-' || r == '_' || r == '\'':
		case unicode.IsDigit(r):
		case unicode.IsLetter(r) && !unicode.IsUpper(r):
		default:
			return false
		}
	}
	return true
}

// wireCommandLocked returns a command as Discord does: the definition with
// id, application_id, version, guild_id and defaults. The caller holds s.mu.
func (s *Server) wireCommandLocked(c *Command) json.RawMessage {
	var m map[string]any
	if err := json.Unmarshal(c.Definition, &m); err != nil || m == nil {
		m = map[string]any{}
	}
	m["id"] = c.ID
	m["application_id"] = s.cfg.applicationID
	m["version"] = c.Version
	m["type"] = c.Type
	m["name"] = c.Name
	m["description"] = c.Description
	if c.GuildID != 0 {
		m["guild_id"] = c.GuildID
	}
	setDefault(m, "default_member_permissions", nil)
	setDefault(m, "nsfw", false)
	setDefault(m, "integration_types", []int{0})
	setDefault(m, "contexts", nil)
	if c.GuildID == 0 {
		setDefault(m, "dm_permission", true)
	}
	out, _ := json.Marshal(m)
	return out
}

func setDefault(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

// Error helpers: Discord's error JSON for common refusals.

func unknown(code int, msg string) restResponse { return apiErr(http.StatusNotFound, code, msg) }

func invalidJSON() restResponse {
	return apiErr(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
}

func invalidForm(errs any) restResponse {
	raw, _ := json.Marshal(errs)
	return restResponse{status: http.StatusBadRequest, body: apiError{Message: "Invalid Form Body", Code: 50035, Errors: raw}}
}

func formError(code, msg string) map[string]any {
	return map[string]any{"_errors": []map[string]string{{"code": code, "message": msg}}}
}
