package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// Gateway opcodes the stand-in speaks.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opPresenceUpdate = 3
	opVoiceState     = 4
	opResume         = 6
	opReconnect      = 7
	opRequestMembers = 8
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
	opSoundboard     = 31
)

// Gateway close codes the stand-in sends.
const (
	closeUnknownError      = 4000
	closeUnknownOpcode     = 4001
	closeDecodeError       = 4002
	closeNotAuthenticated  = 4003
	closeAuthFailed        = 4004
	closeAlreadyAuthed     = 4005
	closeInvalidSeq        = 4007
	closeSessionTimedOut   = 4009
	closeInvalidShard      = 4010
	closeInvalidAPIVersion = 4012
	closeInvalidIntents    = 4013
	closeDisallowedIntents = 4014
)

// maxClientPayload is the largest payload Discord accepts from a client.
const maxClientPayload = 4096

// eventLogLimit bounds how many dispatches a session keeps for RESUME.
const eventLogLimit = 10000

// Session is a snapshot of a gateway session: one IDENTIFY and the
// connections that resumed it.
type Session struct {
	// ID is the session_id sent in READY.
	ID string
	// ShardID and ShardCount are the shard the session identified as.
	ShardID, ShardCount int
	// Intents are the intents it identified with.
	Intents Intents
	// IdentifiedAt is when IDENTIFY arrived, on the server's clock.
	IdentifiedAt time.Time
	// Resumes counts the successful RESUMEs of the session.
	Resumes int
	// Seq is the sequence number of the last dispatch.
	Seq int
	// Connected reports whether a connection is attached and past
	// READY or RESUMED.
	Connected bool
	// Invalid reports whether the session can no longer be resumed.
	Invalid bool
	// Events lists the dispatches of the session in order.
	Events []Dispatch
}

// Dispatch is one dispatched gateway event.
type Dispatch struct {
	// Seq is the event's sequence number.
	Seq int
	// Type is the event name, such as READY or INTERACTION_CREATE.
	Type string
}

// gatewayState is the gateway's bookkeeping, guarded by Server.mu.
type gatewayState struct {
	sessions       []*session
	byID           map[string]*session
	shards         map[int]*session
	conns          map[*gwConn]struct{}
	startRemaining int
}

func newGatewayState() gatewayState {
	return gatewayState{
		byID:           map[string]*session{},
		shards:         map[int]*session{},
		conns:          map[*gwConn]struct{}{},
		startRemaining: 1000,
	}
}

func (g *gatewayState) allConns() []*gwConn {
	out := make([]*gwConn, 0, len(g.conns))
	for c := range g.conns {
		out = append(out, c)
	}
	return out
}

type loggedEvent struct {
	seq   int
	typ   string
	frame []byte
}

// session is a gateway session, guarded by Server.mu.
type session struct {
	id           string
	shardID      int
	shardCount   int
	intents      Intents
	seq          int
	log          []loggedEvent
	conn         *gwConn
	invalid      bool
	identifiedAt time.Time
	resumes      int
}

func (ss *session) snapshot() Session {
	out := Session{
		ID:           ss.id,
		ShardID:      ss.shardID,
		ShardCount:   ss.shardCount,
		Intents:      ss.intents,
		IdentifiedAt: ss.identifiedAt,
		Resumes:      ss.resumes,
		Seq:          ss.seq,
		Connected:    ss.conn != nil && ss.conn.ready,
		Invalid:      ss.invalid,
		Events:       make([]Dispatch, 0, len(ss.log)),
	}
	for _, e := range ss.log {
		out.Events = append(out.Events, Dispatch{Seq: e.seq, Type: e.typ})
	}
	return out
}

type frameKind int

const (
	frameData frameKind = iota
	frameClose
	frameKill
)

type outFrame struct {
	kind        frameKind
	data        []byte
	zlibPayload bool
	code        int
	text        string
}

// gwConn is one websocket connection to the gateway.
type gwConn struct {
	s        *Server
	ws       *websocket.Conn
	compress string
	log      zerolog.Logger // set before the connection is shared

	// Guarded by Server.mu.
	sess        *session
	authed      bool // sent IDENTIFY or RESUME
	ready       bool // dispatches go out
	zlibPayload bool

	qmu     sync.Mutex
	queue   []outFrame
	stopped bool
	wake    chan struct{}
	done    chan struct{}
}

// enqueue hands a frame to the writer goroutine. Frames after a close are
// dropped.
func (c *gwConn) enqueue(f outFrame) {
	c.qmu.Lock()
	if c.stopped {
		c.qmu.Unlock()
		return
	}
	if f.kind != frameData {
		c.stopped = true
	}
	c.queue = append(c.queue, f)
	c.qmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// send queues a payload, compressed as the connection asked.
func (c *gwConn) send(payload []byte) {
	c.enqueue(outFrame{kind: frameData, data: payload, zlibPayload: c.zlibPayload})
}

// closeWith queues a close frame; the writer closes the connection after
// sending it.
func (c *gwConn) closeWith(code int, text string) {
	c.log.Debug().Int("code", code).Str("reason", text).Msg("closing gateway connection")
	c.enqueue(outFrame{kind: frameClose, code: code, text: text})
}

// kill drops the connection without a close frame.
func (c *gwConn) kill() {
	c.enqueue(outFrame{kind: frameKill})
	_ = c.ws.Close()
}

// writeLoop writes queued frames in order until a close, a write error or
// the server's shutdown.
func (c *gwConn) writeLoop() {
	defer close(c.done)
	enc := newFrameEncoder(c.compress)
	for {
		c.qmu.Lock()
		frames := c.queue
		c.queue = nil
		c.qmu.Unlock()
		for _, f := range frames {
			switch f.kind {
			case frameKill:
				_ = c.ws.Close()
				return
			case frameClose:
				msg := websocket.FormatCloseMessage(f.code, f.text)
				_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
				_ = c.ws.Close()
				return
			}
			data, binary, err := enc.encode(f.data, f.zlibPayload)
			if err != nil {
				c.log.Error().Err(err).Msg("encoding gateway frame")
				_ = c.ws.Close()
				return
			}
			mt := websocket.TextMessage
			if binary {
				mt = websocket.BinaryMessage
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := c.ws.WriteMessage(mt, data); err != nil {
				c.log.Debug().Err(err).Msg("gateway write failed")
				_ = c.ws.Close()
				return
			}
		}
		if len(frames) > 0 {
			continue
		}
		select {
		case <-c.wake:
		case <-c.s.done:
			_ = c.ws.Close()
			return
		}
	}
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	CheckOrigin:     func(*http.Request) bool { return true },
}

// serveGateway upgrades a request to a gateway connection and reads from it
// until it closes.
func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	compress := q.Get("compress")
	switch compress {
	case compressNone, compressZlibStream, compressZstdStream:
	default:
		http.Error(w, fmt.Sprintf("discordtest: unsupported compress=%q", compress), http.StatusBadRequest)
		return
	}
	if enc := q.Get("encoding"); enc != "" && enc != "json" {
		http.Error(w, fmt.Sprintf("discordtest: unsupported encoding=%q, only json", enc), http.StatusBadRequest)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.cfg.logger.Debug().Err(err).Msg("gateway upgrade failed")
		return
	}
	ws.SetReadLimit(maxClientPayload)
	c := &gwConn{
		s:        s,
		ws:       ws,
		compress: compress,
		log:      s.cfg.logger.With().Str("remote", r.RemoteAddr).Logger(),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.gw.conns[c] = struct{}{}
	s.mu.Unlock()

	go c.writeLoop()
	c.log.Debug().Str("path", r.URL.Path).Str("compress", compress).Msg("gateway connection opened")

	if v := q.Get("v"); v != fmt.Sprint(APIVersion) {
		c.closeWith(closeInvalidAPIVersion, "Invalid API version")
	} else {
		hello, _ := json.Marshal(payload{Op: opHello, D: map[string]any{
			"heartbeat_interval": s.cfg.heartbeatInterval.Milliseconds(),
			"_trace":             []string{"discordtest"},
		}})
		c.send(hello)
	}

	s.readLoop(c)

	// The client went away or the connection was closed on purpose.
	c.enqueue(outFrame{kind: frameKill})
	<-c.done
	s.mu.Lock()
	delete(s.gw.conns, c)
	if c.sess != nil && c.sess.conn == c {
		c.sess.conn = nil
	}
	c.ready = false
	s.notifyLocked()
	s.mu.Unlock()
	c.log.Debug().Msg("gateway connection closed")
}

// payload is a gateway message as sent by the stand-in.
type payload struct {
	Op int     `json:"op"`
	D  any     `json:"d"`
	S  *int    `json:"s"`
	T  *string `json:"t"`
}

// clientPayload is a gateway message as received from a client.
type clientPayload struct {
	Op *int            `json:"op"`
	D  json.RawMessage `json:"d"`
}

func (s *Server) readLoop(c *gwConn) {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); ok {
				c.log.Debug().Int("code", ce.Code).Str("text", ce.Text).Msg("client closed gateway connection")
			} else if err == websocket.ErrReadLimit {
				c.closeWith(closeDecodeError, "Payload too large")
			}
			return
		}
		var p clientPayload
		if err := json.Unmarshal(data, &p); err != nil || p.Op == nil {
			c.closeWith(closeDecodeError, "Error while decoding payload.")
			continue
		}
		s.mu.Lock()
		s.handleOpLocked(c, *p.Op, p.D)
		s.mu.Unlock()
	}
}

// handleOpLocked acts on one client payload. The caller holds s.mu.
func (s *Server) handleOpLocked(c *gwConn, op int, d json.RawMessage) {
	switch op {
	case opHeartbeat:
		s.ackHeartbeatLocked(c)
	case opIdentify:
		if c.authed {
			c.closeWith(closeAlreadyAuthed, "Already authenticated.")
			return
		}
		s.identifyLocked(c, d)
	case opResume:
		if c.authed {
			c.closeWith(closeAlreadyAuthed, "Already authenticated.")
			return
		}
		s.resumeLocked(c, d)
	case opPresenceUpdate, opVoiceState, opRequestMembers, opSoundboard:
		if !c.authed {
			c.closeWith(closeNotAuthenticated, "Not authenticated.")
		}
	default:
		if !c.authed {
			c.closeWith(closeNotAuthenticated, "Not authenticated.")
			return
		}
		c.closeWith(closeUnknownOpcode, "Unknown opcode.")
	}
}

// ackHeartbeatLocked sends HEARTBEAT_ACK on c once the heartbeat ACK
// delay has passed, as the network would. The caller holds s.mu.
func (s *Server) ackHeartbeatLocked(c *gwConn) {
	ack, _ := json.Marshal(payload{Op: opHeartbeatACK})
	if s.cfg.heartbeatACKDelay <= 0 {
		c.send(ack)
		return
	}
	// A connection closed meanwhile drops the frame (see enqueue).
	time.AfterFunc(s.cfg.heartbeatACKDelay, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		c.send(ack)
	})
}

type identifyData struct {
	Token    string          `json:"token"`
	Intents  *int64          `json:"intents"`
	Shard    *[2]int         `json:"shard"`
	Compress bool            `json:"compress"`
	Presence json.RawMessage `json:"presence"`
}

// identifyLocked handles IDENTIFY: it checks the token, shard and intents,
// starts a session and sends READY and a GUILD_CREATE per guild of the
// shard. The caller holds s.mu.
func (s *Server) identifyLocked(c *gwConn, d json.RawMessage) {
	var id identifyData
	if err := json.Unmarshal(d, &id); err != nil {
		c.closeWith(closeDecodeError, "Error while decoding payload.")
		return
	}
	if id.Token != s.cfg.token && id.Token != "Bot "+s.cfg.token {
		c.closeWith(closeAuthFailed, "Authentication failed.")
		return
	}
	shard := [2]int{0, 1}
	if id.Shard != nil {
		shard = *id.Shard
	}
	if shard[1] < 1 || shard[0] < 0 || shard[0] >= shard[1] {
		c.closeWith(closeInvalidShard, "Invalid shard.")
		return
	}
	if id.Intents == nil {
		c.closeWith(closeDecodeError, "Error while decoding payload.")
		return
	}
	intents := Intents(*id.Intents)
	if intents&^IntentsAll != 0 {
		c.closeWith(closeInvalidIntents, "Invalid intent(s).")
		return
	}
	if !s.intentsAllowed(intents) {
		c.closeWith(closeDisallowedIntents, "Disallowed intent(s).")
		return
	}
	now := s.cfg.clock()
	sess := &session{
		id:           randomHex(16),
		shardID:      shard[0],
		shardCount:   shard[1],
		intents:      intents,
		identifiedAt: now,
		conn:         c,
	}
	if old := s.gw.shards[sess.shardID]; old != nil && old.conn != nil && old.conn != c {
		old.conn.ready = false
		old.conn = nil
	}
	s.gw.sessions = append(s.gw.sessions, sess)
	s.gw.byID[sess.id] = sess
	s.gw.shards[sess.shardID] = sess
	if s.gw.startRemaining > 0 {
		s.gw.startRemaining--
	}
	c.sess = sess
	c.authed = true
	c.ready = true
	c.zlibPayload = id.Compress && c.compress == compressNone
	c.log.Debug().Int("shard_id", sess.shardID).Int("shard_count", sess.shardCount).Str("session_id", sess.id).
		Int64("intents", int64(intents)).Msg("identified")

	var guilds []*guildState
	for _, gid := range s.guildOrder {
		if shardOf(gid, sess.shardCount) == sess.shardID {
			guilds = append(guilds, s.guilds[gid])
		}
	}
	type unavailable struct {
		ID          string `json:"id"`
		Unavailable bool   `json:"unavailable"`
	}
	ready := struct {
		V                int               `json:"v"`
		User             wireSelfUser      `json:"user"`
		Guilds           []unavailable     `json:"guilds"`
		SessionID        string            `json:"session_id"`
		ResumeGatewayURL string            `json:"resume_gateway_url"`
		Shard            [2]int            `json:"shard"`
		Application      map[string]any    `json:"application"`
		PrivateChannels  []json.RawMessage `json:"private_channels"`
		Relationships    []json.RawMessage `json:"relationships"`
		Presences        []json.RawMessage `json:"presences"`
		GuildJoinRequest []json.RawMessage `json:"guild_join_requests"`
		SessionType      string            `json:"session_type"`
		GeoRTCRegions    []string          `json:"geo_ordered_rtc_regions"`
		Trace            []string          `json:"_trace"`
	}{
		V:                APIVersion,
		User:             wireSelfUser{wireUser: s.botUser.wire(), Verified: true},
		Guilds:           make([]unavailable, 0, len(guilds)),
		SessionID:        sess.id,
		ResumeGatewayURL: s.ResumeGatewayURL(),
		Shard:            shard,
		Application:      map[string]any{"id": s.cfg.applicationID, "flags": s.cfg.appFlags},
		PrivateChannels:  []json.RawMessage{},
		Relationships:    []json.RawMessage{},
		Presences:        []json.RawMessage{},
		GuildJoinRequest: []json.RawMessage{},
		SessionType:      "normal",
		GeoRTCRegions:    []string{"discordtest"},
		Trace:            []string{"discordtest"},
	}
	for _, g := range guilds {
		ready.Guilds = append(ready.Guilds, unavailable{ID: g.ID.String(), Unavailable: true})
	}
	s.dispatchLocked(sess, "READY", ready)
	if intents.Has(IntentGuilds) {
		for _, g := range guilds {
			s.dispatchLocked(sess, "GUILD_CREATE", s.wireGatewayGuildLocked(g, intents))
		}
	}
	s.notifyLocked()
}

// intentsAllowed reports whether the application may use the privileged
// intents among intents.
func (s *Server) intentsAllowed(intents Intents) bool {
	f := s.cfg.appFlags
	if intents.Has(IntentGuildMembers) &&
		!f.Has(discord.ApplicationFlagGatewayGuildMembers) && !f.Has(discord.ApplicationFlagGatewayGuildMemberLimited) {
		return false
	}
	if intents.Has(IntentGuildPresences) &&
		!f.Has(discord.ApplicationFlagGatewayPresence) && !f.Has(discord.ApplicationFlagGatewayPresenceLimited) {
		return false
	}
	if intents.Has(IntentMessageContent) &&
		!f.Has(discord.ApplicationFlagGatewayMessageContent) && !f.Has(discord.ApplicationFlagGatewayMessageContentLimited) {
		return false
	}
	return true
}

type resumeData struct {
	Token     string `json:"token"`
	SessionID string `json:"session_id"`
	Seq       *int   `json:"seq"`
}

// resumeLocked handles RESUME: it replays the dispatches the client missed,
// then sends RESUMED. An unknown or invalidated session gets
// INVALID_SESSION (not resumable). The caller holds s.mu.
func (s *Server) resumeLocked(c *gwConn, d json.RawMessage) {
	var rd resumeData
	if err := json.Unmarshal(d, &rd); err != nil {
		c.closeWith(closeDecodeError, "Error while decoding payload.")
		return
	}
	if rd.Token != s.cfg.token && rd.Token != "Bot "+s.cfg.token {
		c.closeWith(closeAuthFailed, "Authentication failed.")
		return
	}
	sess, ok := s.gw.byID[rd.SessionID]
	seq := 0
	if rd.Seq != nil {
		seq = *rd.Seq
	}
	if !ok || sess.invalid || (len(sess.log) > 0 && seq < sess.log[0].seq-1) {
		c.log.Debug().Str("session_id", rd.SessionID).Msg("resume refused")
		inv, _ := json.Marshal(payload{Op: opInvalidSession, D: false})
		c.send(inv)
		return
	}
	if seq > sess.seq {
		c.closeWith(closeInvalidSeq, "Invalid seq.")
		return
	}
	if old := sess.conn; old != nil && old != c {
		old.ready = false
		old.closeWith(closeUnknownError, "Session resumed elsewhere.")
	}
	sess.conn = c
	sess.resumes++
	c.sess = sess
	c.authed = true
	replayed := 0
	for _, e := range sess.log {
		if e.seq > seq {
			c.send(e.frame)
			replayed++
		}
	}
	c.ready = true
	c.log.Debug().Int("shard_id", sess.shardID).Str("session_id", sess.id).Int("seq", seq).Int("replayed", replayed).Msg("resumed")
	s.dispatchLocked(sess, "RESUMED", map[string]any{"_trace": []string{"discordtest"}})
	s.notifyLocked()
}

// dispatchLocked sends an event to a session, or keeps it for the session's
// next RESUME while no connection is attached. The caller holds s.mu.
func (s *Server) dispatchLocked(sess *session, typ string, d any) {
	sess.seq++
	seq := sess.seq
	frame, err := json.Marshal(payload{Op: opDispatch, D: d, S: &seq, T: &typ})
	if err != nil {
		s.cfg.logger.Error().Err(err).Str("event", typ).Msg("encoding dispatch")
		return
	}
	sess.log = append(sess.log, loggedEvent{seq: seq, typ: typ, frame: frame})
	if len(sess.log) > eventLogLimit {
		sess.log = slices.Delete(sess.log, 0, len(sess.log)-eventLogLimit)
	}
	if c := sess.conn; c != nil && c.ready {
		c.send(frame)
	}
}

// sessionForGuildLocked returns the session that receives a guild's events:
// the latest valid session, current for its shard, whose shard owns the
// guild. The caller holds s.mu.
func (s *Server) sessionForGuildLocked(guildID snowflake.ID) *session {
	for i := len(s.gw.sessions) - 1; i >= 0; i-- {
		sess := s.gw.sessions[i]
		if sess.invalid || s.gw.shards[sess.shardID] != sess || shardOf(guildID, sess.shardCount) != sess.shardID {
			continue
		}
		return sess
	}
	return nil
}

// dispatchGuildCreateLocked tells the shard owning a new guild about it. The
// caller holds s.mu.
func (s *Server) dispatchGuildCreateLocked(gs *guildState) {
	sess := s.sessionForGuildLocked(gs.ID)
	if sess == nil || !sess.intents.Has(IntentGuilds) {
		return
	}
	s.dispatchLocked(sess, "GUILD_CREATE", s.wireGatewayGuildLocked(gs, sess.intents))
}

// dispatchMessageCreateLocked tells the shard owning a message's guild
// about it, if it asked for guild messages. The caller holds s.mu.
func (s *Server) dispatchMessageCreateLocked(m *Message) {
	s.dispatchMessageLocked(m, "MESSAGE_CREATE")
}

// dispatchMessageLocked sends a message as MESSAGE_CREATE or
// MESSAGE_UPDATE (typ) to the shard owning its guild, if it asked for
// guild messages: the full message with guild_id and the author's member,
// its content only where messageContentVisibleLocked allows. The caller
// holds s.mu.
func (s *Server) dispatchMessageLocked(m *Message, typ string) {
	sess := s.sessionForGuildLocked(m.GuildID)
	if sess == nil || !sess.intents.Has(IntentGuildMessages) {
		return
	}
	w := s.wireMessageLocked(m, s.messageContentVisibleLocked(m, sess.intents, true))
	w.GuildID = ptr(m.GuildID)
	if gs, ok := s.guilds[m.GuildID]; ok {
		if mem, ok := gs.members[m.AuthorID]; ok {
			wm := s.wireMemberLocked(mem, false)
			w.Member = &wm
		}
	}
	s.dispatchLocked(sess, typ, w)
}

// dispatchMessageDeleteLocked tells the shard owning a message's guild that
// it is gone, if it asked for guild messages. The caller holds s.mu.
func (s *Server) dispatchMessageDeleteLocked(m *Message) {
	sess := s.sessionForGuildLocked(m.GuildID)
	if sess == nil || !sess.intents.Has(IntentGuildMessages) {
		return
	}
	s.dispatchLocked(sess, "MESSAGE_DELETE", map[string]snowflake.ID{"id": m.ID, "channel_id": m.ChannelID, "guild_id": m.GuildID})
}

// Sessions returns every gateway session in the order they identified.
func (s *Server) Sessions() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Session, 0, len(s.gw.sessions))
	for _, sess := range s.gw.sessions {
		out = append(out, sess.snapshot())
	}
	return out
}

// Session returns the current session of a shard: the last one that
// identified as that shard.
func (s *Server) Session(shardID int) (Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.gw.shards[shardID]
	if !ok {
		return Session{}, false
	}
	return sess.snapshot(), true
}

// Identifies returns how many times a shard identified.
func (s *Server) Identifies(shardID int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sess := range s.gw.sessions {
		if sess.shardID == shardID {
			n++
		}
	}
	return n
}

// Resumes returns how many times a shard resumed, over all its sessions.
func (s *Server) Resumes(shardID int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sess := range s.gw.sessions {
		if sess.shardID == shardID {
			n += sess.resumes
		}
	}
	return n
}

// WaitShardReady waits until a shard has a live connection that has been
// sent READY or RESUMED, and returns its session. After Reconnect,
// InvalidateSession or Disconnect it waits for the next such connection.
func (s *Server) WaitShardReady(ctx context.Context, shardID int) (Session, error) {
	var out Session
	err := s.waitFor(ctx, func() bool {
		sess, ok := s.gw.shards[shardID]
		if !ok || sess.invalid || sess.conn == nil || !sess.conn.ready {
			return false
		}
		out = sess.snapshot()
		return true
	})
	return out, err
}

// liveConnLocked returns a shard's session and its live connection. The
// caller holds s.mu.
func (s *Server) liveConnLocked(shardID int) (*session, *gwConn, error) {
	if s.closed {
		return nil, nil, ErrClosed
	}
	sess, ok := s.gw.shards[shardID]
	if !ok || sess.invalid {
		return nil, nil, fmt.Errorf("%w %d", ErrNoSession, shardID)
	}
	if sess.conn == nil || !sess.conn.ready {
		return nil, nil, fmt.Errorf("%w: shard %d", ErrNotConnected, shardID)
	}
	return sess, sess.conn, nil
}

// Reconnect sends RECONNECT (opcode 7) to a shard's connection, as Discord
// does before moving a session. The session stays resumable; dispatches
// until the client resumes are kept and replayed.
func (s *Server) Reconnect(shardID int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, c, err := s.liveConnLocked(shardID)
	if err != nil {
		return err
	}
	msg, _ := json.Marshal(payload{Op: opReconnect})
	c.send(msg)
	c.ready = false
	sess.conn = nil
	s.notifyLocked()
	return nil
}

// InvalidateSession sends INVALID_SESSION (opcode 9) to a shard's
// connection. With resumable false the session is gone: the client must
// identify again and a RESUME is answered with INVALID_SESSION.
func (s *Server) InvalidateSession(shardID int, resumable bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, c, err := s.liveConnLocked(shardID)
	if err != nil {
		return err
	}
	msg, _ := json.Marshal(payload{Op: opInvalidSession, D: resumable})
	c.send(msg)
	c.ready = false
	sess.conn = nil
	sess.invalid = !resumable
	s.notifyLocked()
	return nil
}

// Disconnect closes a shard's connection with a close code, or drops it
// without a close frame when code is 0 (a network failure). Codes after
// which Discord forgets the session (4004, 4007, 4009, 4010-4014) make it
// unresumable.
func (s *Server) Disconnect(shardID int, code int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, c, err := s.liveConnLocked(shardID)
	if err != nil {
		return err
	}
	c.ready = false
	sess.conn = nil
	switch code {
	case closeAuthFailed, closeInvalidSeq, closeSessionTimedOut, closeInvalidShard, 4011, closeInvalidAPIVersion,
		closeInvalidIntents, closeDisallowedIntents:
		sess.invalid = true
	}
	if code == 0 {
		c.kill()
	} else {
		c.closeWith(code, "closed by test")
	}
	s.notifyLocked()
	return nil
}
