// Package metrics owns pinbot's Prometheus registry (not the global one)
// and every collector in it: pinbot's own, the Go runtime's and the
// process's. The engine, the bot, the reconciler and the HTTP clients
// report to it through hooks of their own (actors.Observer, bot.Observer,
// reconcile.Observer, a wrapped http.RoundTripper), so that none of them
// imports Prometheus; package app wires them and serves Handler at Path
// on the HTTP listener.
//
// # Metrics
//
// Label values come from fixed, short lists; no account, user, guild or
// channel ID is ever a label. docs/design.md ("Observability") explains
// each metric.
//
//	pinbot_pins_total{source,result}                counter: PinSources × pinned|failed|unknown|skipped|queued
//	pinbot_duplicates_avoided_total{source}         counter: PinSources: "already pinned" answers, no slot used
//	pinbot_pin_failures_total{reason}               counter: PinFailureReasons
//	pinbot_interactions_total{command,result}       counter: bot.InteractionLabels × InteractionResults
//	pinbot_interaction_refusals_total{reason}       counter: InteractionRefusals (throttled|closing|busy)
//	pinbot_http_refusals_total{reason}              counter: HTTPRefusals (http_rate|operator_rate): the listener's 429s
//	pinbot_reactions_total{result}                  counter: ReactionResults: what became of each pin reaction
//	pinbot_interaction_ack_seconds                  histogram: taken up → initial response accepted
//	pinbot_gateway_shards_connected                 gauge
//	pinbot_gateway_reconnects_total                 counter
//	pinbot_gateway_resumes_total                    counter
//	pinbot_upstream_requests_total{upstream,route,class}   counter: class 2xx|3xx|4xx|429|5xx|error
//	pinbot_upstream_request_duration_seconds{upstream,route} histogram
//	pinbot_upstream_retry_after_seconds{upstream}   histogram: waits asked for by 429s
//	pinbot_engine_grants_total                      counter: slots granted, durable
//	pinbot_engine_refusals_total{reason}            counter: limit|held|queue
//	pinbot_engine_commits_total                     counter
//	pinbot_engine_releases_total                    counter
//	pinbot_engine_lease_expiries_total              counter
//	pinbot_engine_resident_accounts                 gauge
//	pinbot_engine_parked_accounts                   gauge: of the resident ones
//	pinbot_engine_queued_accounts                   gauge
//	pinbot_journal_batch_writes                     histogram: account writes per batch
//	pinbot_journal_commit_seconds                   histogram: Store.Write of a batch
//	pinbot_journal_write_failures_total             counter
//	pinbot_engine_snapshot_seconds                  histogram: final snapshot of a passivation
//	pinbot_engine_replay_seconds                    histogram: load and replay of an account
//	pinbot_reconcile_accounts_total{result}         counter: ReconcileResults (reconciled|failed|skipped)
//	pinbot_reconcile_rounds_total{end}              counter: ReconcileEnds (complete|bounded|paused|failed)
//	pinbot_reconcile_observed_pins_total            counter: pins made elsewhere counted (PINBOT_COUNT_ALL_PINS)
//	pinbot_reconcile_unexplained_total              counter: drifts beyond what the rules explain
//	pinbot_reconcile_drift_accounts{sign}           gauge: positive|negative, accounts at their last reconciliation
//	pinbot_reconcile_drift_max_pins                 gauge: the largest positive drift
//	pinbot_reconcile_drift_min_pins                 gauge: the most negative drift
//	go_*, process_*                                 the Go runtime's and the process's collectors
//
// A cluster member's, once Metrics.Cluster is called (the peer label is a
// member id: one series per live member):
//
//	pinbot_cluster_partitions_held                  gauge
//	pinbot_cluster_members                          gauge: live members seen
//	pinbot_cluster_lease_remaining_seconds          gauge: until the serving deadline
//	pinbot_cluster_partitions_acquired_total        counter
//	pinbot_cluster_partitions_lost_total            counter
//	pinbot_cluster_partitions_handed_over_total     counter
//	pinbot_cluster_deadline_lapses_total            counter
//	pinbot_cluster_lease_expiries_total             counter
//	pinbot_cluster_fenced_writes_total              counter: account writes refused as fenced off
//	pinbot_cluster_peer_calls_total{method,outcome} counter: PeerOutcomes
//	pinbot_cluster_peer_call_seconds{method}        histogram
//	pinbot_cluster_peer_served_total{method,outcome} counter
//	pinbot_cluster_peer_refusals_total{reason}      counter: PeerRefusals
//	pinbot_cluster_peer_clock_offset_seconds{peer}  gauge: the peer's clock minus this member's
//	pinbot_cluster_peer_clock_offset_error_seconds{peer} gauge: half the measure's round trip
//	pinbot_cluster_forwards_total{method,outcome}   counter: ForwardOutcomes
//	pinbot_cluster_etcd_request_seconds{method}     histogram: EtcdMethods
//	pinbot_cluster_etcd_request_failures_total{method} counter
//
// # Usage
//
//	m := metrics.New()
//	ecfg.Observer = m.Engine()
//	eng, _ := actors.New(ecfg, store, log)
//	m.WatchEngine(eng)
//	pcfg.HTTPClient = &http.Client{Transport: m.Transport(metrics.Pinterest, nil, pinterest.RetryWait)}
//	bcfg.Observer = m.Bot(bot.InteractionLabels())
//	lcfg.Refused = m.HTTPRefused // lcfg: the edge.Config of the HTTP listener
//	rcfg.Observer = m.Reconcile() // rcfg: the reconcile.Config
//	m.WatchDrift(func() metrics.DriftSummary { ... }) // the reconciler's Summary
//	bcfg.DiscordTransport = func(rt http.RoundTripper) http.RoundTripper { return m.Transport(metrics.Discord, rt, nil) }
//	mux.Handle(metrics.Path, m.Handler())
package metrics
