// Package discordtest is a Discord stand-in for tests, in the style of
// net/http/httptest: NewServer starts a server on a loopback port that
// speaks the gateway and REST protocols a real disgo (v0.19.6) client uses,
// backed by an in-memory model of guilds, channels, roles, members and
// messages. Tests drive it from the Discord side (a user runs a command,
// the network drops, Discord answers 429) and read back what the bot did.
//
// # Usage
//
// Start a server, fill the model, point disgo at it, open the gateway:
//
//	s := discordtest.NewServer(discordtest.WithShardCount(2), discordtest.WithMaxConcurrency(2))
//	defer s.Close()
//	g, _ := s.AddGuild(discordtest.Guild{})
//	ch, _ := s.AddChannel(discordtest.Channel{GuildID: g.ID})
//	alice, _ := s.AddMember(discordtest.Member{GuildID: g.ID, Username: "alice"})
//
//	client, _ := disgo.New(s.Token(),
//		bot.WithRestClientConfigOpts(rest.WithURL(s.APIURL())),
//		bot.WithShardManagerConfigOpts(
//			sharding.WithIdentifyRateLimiter(gateway.NewNoopIdentifyRateLimiter()),
//			sharding.WithGatewayConfigOpts(
//				gateway.WithIntents(gateway.IntentGuilds),
//				gateway.WithCompression(gateway.CompressionZlibStream),
//			),
//		),
//		bot.WithEventManagerConfigOpts(bot.WithAsyncEventsEnabled()),
//		bot.WithEventListeners(mux),
//	)
//	_ = client.OpenShardManager(ctx)
//	_, _ = s.WaitShardReady(ctx, 0)
//
//	in, _ := s.Interact(discordtest.Invocation{
//		ChannelID: ch.ID,
//		UserID:    alice.UserID,
//		Data:      discordtest.ChatInput{Name: "ping"},
//	})
//	rs, _ := in.Wait(ctx, 2) // the deferral and the edit
//
// s.Token encodes the application ID, as Discord's tokens do, so disgo
// finds it. rest.WithURL(s.APIURL()) is the only address disgo needs: it
// reads the gateway URL, the recommended shard count and max_concurrency
// from GET /gateway/bot (set them with WithShardCount and
// WithMaxConcurrency, or override them with sharding.WithShardCount and
// sharding.WithShardIDs). gateway.WithURL(s.GatewayURL()) works too. Every
// compression disgo offers is served: none, zlib-payload, zlib-stream and
// zstd-stream, its default (sent as raw zstd blocks).
//
// # Traps in disgo v0.19.6
//
//   - Opening a gateway connection waits one second before dialing, and so
//     does every reconnect; tests that connect take seconds, not
//     milliseconds.
//   - The default identify rate limiter spaces IDENTIFYs of a bucket five
//     seconds apart; pass sharding.WithIdentifyRateLimiter with
//     gateway.NewNoopIdentifyRateLimiter() in tests.
//   - Gateway.CloseWithCode races with the heartbeat goroutine; a test that
//     opens a gateway connection fails under -race for that alone. This
//     package's own such tests are in files built with !race and are named
//     TestDisgoGateway*.
//   - A heartbeat counts as sent only once its write has returned, and the
//     next tick takes the connection for a zombie (a warning, a close and
//     a RESUME) when the last ACK came before that. An ACK sent at once on
//     loopback often does, so the stand-in waits DefaultHeartbeatACKDelay
//     before answering, as Discord's answers always do.
//   - Events are handled one at a time on the shard's reading goroutine
//     unless bot.WithAsyncEventsEnabled is set; a handler blocked there
//     blocks the shard.
//   - The REST rate limiter's Close blocks while requests are in flight
//     (until its context ends) and leaves the limiter locked. The stand-in
//     records a response before disgo has read it, so wait for the bot's
//     handlers to return before closing the client, and close the client
//     before the server.
//   - On a 429 disgo reads only the Retry-After header, whole seconds; the
//     stand-in rounds RetryAfter up as Discord does, so a positive
//     RetryAfter costs at least a second, zero none. After a global 429
//     every route waits, interaction callbacks included.
//
// # The gateway
//
// HELLO carries heartbeat_interval (WithHeartbeatInterval); heartbeats get
// HEARTBEAT_ACK, after a network's latency (WithHeartbeatACKDelay). IDENTIFY checks the token (close 4004), the shard (4010),
// the intents (4013) and the privileged intents the application may use
// (4014, see WithApplicationFlags), then sends READY with session_id,
// resume_gateway_url (ResumeGatewayURL), the bot user, the application's id
// and flags and the shard's guilds as unavailable, then a GUILD_CREATE per
// guild of the shard ((id >> 22) % shard_count) if the GUILDS intent is
// set, with members other than the bot only under GUILD_MEMBERS. Sequence
// numbers count per session. RESUME replays every dispatch after the
// client's seq, then sends RESUMED; an unknown or invalidated session gets
// INVALID_SESSION false, a seq from the future close 4007. Tests make
// trouble with Reconnect (opcode 7), InvalidateSession (opcode 9,
// resumable or not) and Disconnect (a close code, or a dropped
// connection). Dispatches to a session whose connection is down are kept
// for its RESUME. AddGuild sends GUILD_CREATE, AddMessage MESSAGE_CREATE,
// EditMessage MESSAGE_UPDATE and DeleteMessage MESSAGE_DELETE (under
// GUILD_MESSAGES; content, attachments and embeds under MESSAGE_CONTENT
// unless the bot wrote or is mentioned in the message) to the shard owning
// the guild. AddReaction and RemoveReaction send MESSAGE_REACTION_ADD and
// MESSAGE_REACTION_REMOVE (under GUILD_MESSAGE_REACTIONS) with Discord's
// fields: user_id, channel_id, message_id, guild_id, emoji {id, name}
// (a unicode emoji's id null; custom emoji are given as "name:id"),
// burst false, type 0, and on an add the reacting member and
// message_author_id. A reaction the user already made, or a removal of
// one not made, changes nothing and sends nothing, as on Discord. The
// message keeps its reactions, which GET message answers with counts
// (me for the bot's own). An EditMessage of the content or attachments
// sets edited_timestamp; of the embeds alone, as when Discord unfolds a
// link, it does not. Sessions, Session, Identifies, Resumes and
// WaitShardReady report on the gateway.
//
// Not modeled: the gateway send rate limit (120 per minute), closing
// connections that stop heartbeating, REQUEST_GUILD_MEMBERS answers,
// presence and voice updates (accepted and ignored), the ETF encoding,
// direct messages and their reactions, super reactions (burst), the
// removal of all reactions or of one emoji's, threads' own members.
//
// # Interactions
//
// Interact builds an APPLICATION_COMMAND (ChatInput with options resolved
// from the model, MessageCommand with the target message resolved, content
// included), MESSAGE_COMPONENT (SelectMenu, Button) or APPLICATION_COMMAND_AUTOCOMPLETE
// (Autocomplete) interaction with a fresh snowflake ID stamped with the
// server's clock and a fresh token, and dispatches it to the shard that
// owns the guild. member.permissions is the user's permissions in the
// channel and app_permissions the bot's, computed from the model. Commands
// the bot registered lend their IDs.
//
// The callback (POST /interactions/{id}/{token}/callback) accepts the
// types Discord allows for the interaction: 4, 5 and 9 for commands; 4, 5,
// 6, 7 and 9 for components; 8 for autocomplete. It must arrive within
// InteractionDeadline (3 s) of the interaction's creation, on the clock
// given to WithClock (ManualClock moves only when told): later it gets 404
// {"code":10062,"message":"Unknown interaction"}. A second initial callback
// gets 400 {"code":40060,"message":"Interaction has already been
// acknowledged."}. Edits of @original and followups need an acknowledged
// interaction (else 404, 10015 Unknown Webhook) and a token younger than
// InteractionTokenLifetime (else 401, 50027); the first followup after a
// deferral completes the loading message, as on Discord. Messages the bot
// sends are stored in the model with IDs, so a component test can point
// at them. Responses lists every such request in order, refused ones
// included, with their times; WaitResponse and WaitResponses block on
// them; FirstResponseLatency and DuplicateAcks summarize.
//
// # REST
//
// Routes (relative to APIURL, names as in disgo's rest package; see the
// Route* constants): GET /gateway, /gateway/bot, /users/@me, /users/{id},
// /oauth2/applications/@me, /applications/@me; GET, PUT (bulk overwrite,
// recorded by CommandSyncs) and POST application commands, global and per
// guild; the interaction callback and webhook routes; GET /channels/{id},
// GET /channels/{id}/messages/{id}, POST /channels/{id}/messages; GET
// /guilds/{id}, /guilds/{id}/channels, /guilds/{id}/roles and
// /guilds/{id}/members/{user}; POST /users/@me/channels, which opens the
// bot's DM channel with a user (the same one every time), to which POST
// /channels/{id}/messages then sends. Bot routes check the Authorization
// header (401). Errors carry Discord's JSON codes: 10003 Unknown Channel,
// 10004 Unknown Guild, 10007 Unknown Member, 10008 Unknown Message, 10013
// Unknown User, 50001 Missing Access (the bot cannot view the channel or
// lacks READ_MESSAGE_HISTORY), 50013 Missing Permissions, 50006 empty
// message, 50007 Cannot send messages to this user (a DM to a user who
// closed them, see SetDMsOpen), 50033 Invalid Recipient(s), 50035 invalid
// form body, 50109 invalid JSON. Messages the bot sends keep the
// allowed_mentions they carried; Messages, DMs and DMChannel read them
// back. Without the message content
// intent enabled for the application (WithApplicationFlags) fetched
// messages lose content, attachments, embeds and components unless the
// bot wrote or is mentioned in them.
//
// Every answer carries X-RateLimit-Limit, -Remaining, -Reset, -Reset-After
// and -Bucket for its route and major parameter (WithRateLimit); they are
// advisory, except that WithChannelRateLimit makes POST
// /channels/{id}/messages enforce Discord's per-channel limit
// (ChannelMessageLimit per ChannelMessageWindow, a sliding log), answering
// 429 with retry_after as Discord does. Inject makes the next n requests matching a route answer 429
// (per route or global, with retry_after, Retry-After, X-RateLimit-Global
// and X-RateLimit-Scope), 403, 404, 5xx, or wait (Delay, Hold) before or
// after taking effect. Requests and WaitRequests list what arrived.
//
// # The model
//
// A Guild has an @everyone role (the guild's ID) and the bot as a member;
// Channels have permission overwrites for roles and members (threads use
// their parent's); Roles have guild-wide permissions; Members have roles;
// Messages have content, attachments (with content types, sizes and signed
// CDN URLs), embeds and reactions. Permissions computes a member's
// permissions in a channel as Discord does: owner and ADMINISTRATOR get
// everything, then @everyone and role permissions, the @everyone
// overwrite, role overwrites together, the member's overwrite; no
// VIEW_CHANNEL means no permission at all. A bot checks whether a user
// may view a channel with GET /guilds/{id}/members/{user}, GET
// /guilds/{id}/roles and GET /channels/{id}, or from disgo's cache filled
// by GUILD_CREATE.
//
// # OAuth2
//
// The application's OAuth2 authorization code flow, as a site that signs
// users in with Discord uses it: the authorization page at
// OAuth2AuthorizeURL (on the site's root, as https://discord.com/oauth2/authorize),
// POST /oauth2/token (RouteOAuth2Token, under APIURL) and GET /users/@me
// with the access token as a Bearer token. The client id is the
// application ID (OAuth2ClientID), the secret OAuth2ClientSecret;
// AddOAuth2Redirect registers the redirect URIs the page sends users to
// (others get a 400 page, as an unknown client_id does). The page acts as
// a browser signed in as the user SetOAuth2User names and approves at
// once, redirecting with code and state; DenyOAuth2 makes it redirect
// with error=access_denied instead, and an unknown scope gets
// error=invalid_scope. The token endpoint takes the client's credentials
// in HTTP Basic authentication or in the form, and answers as Discord
// does: token_type Bearer, expires_in 604800, a refresh token that works
// once, the scopes space-separated; errors are RFC 6749 JSON
// ({"error":"invalid_grant",...}, 401 invalid_client). GET /users/@me
// answers the token's user when the token grants identify, else 401;
// a Bearer token opens no other route.
//
// Decisions that depend on time read only the clock given to WithClock,
// once per request or action (Fault.Delay alone is real time: it stands
// for the network). The Wait methods block on the server's state, never on
// timers.
package discordtest
