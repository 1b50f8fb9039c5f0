package gateway

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus series, on a private registry.
type metrics struct {
	calls        *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	cacheHits    prometheus.Counter
	cacheMisses  prometheus.Counter
	mints        *prometheus.CounterVec
	rejected     *prometheus.CounterVec
	rateLimited  *prometheus.CounterVec
	authFailures *prometheus.CounterVec
	httpRequests *prometheus.CounterVec
	leanCalls    prometheus.Counter
	lostRetries  *prometheus.CounterVec
	lostWrites   *prometheus.CounterVec
	statsReused  prometheus.Counter
	rankAgain    prometheus.Counter
	// Change notifications (gateway/surfaces/watch.go).
	watchChanges  prometheus.Counter
	notified      prometheus.Counter
	notifyDropped prometheus.Counter
}

const ns = "brainstem_gateway"

func newMetrics(reg prometheus.Registerer, g *Gateway) (*metrics, error) {
	m := &metrics{
		calls: counterVec("tool_calls_total",
			"Tool calls by tool, wing (\"*\" for cross-wing) and outcome (ok, tool_error, or a gateway error code).", "tool", "wing", "outcome"),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "tool_call_duration_seconds",
			Help:    "Tool call latency through the gateway, by tool and wing.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"tool", "wing"}),
		cacheHits:   counter("session_cache_hits_total", "Shard-token lookups answered from the grant cache (the session cache)."),
		cacheMisses: counter("session_cache_misses_total", "Shard-token lookups that needed a mint."),
		mints:       counterVec("mints_total", "Mint requests sent to shards, by wing and outcome (ok, forbidden, or an error code).", "wing", "outcome"),
		rejected: counterVec("shard_token_rejections_total",
			"Shard tokens a shard answered unauthenticated to, by wing and kind (cached, fresh).", "wing", "kind"),
		rateLimited:  counterVec("rate_limited_total", "Requests refused with 429, by limit (email, failed_auth_ip).", "limit"),
		authFailures: counterVec("auth_failures_total", "Requests refused by authentication, by kind (no_token, or the SSO error kind).", "kind"),
		httpRequests: counterVec("http_requests_total", "Requests to the MCP endpoint by HTTP method and status code.", "method", "code"),
		lostRetries:  counterVec("lost_read_retries_total", "Read calls sent again because the connection to the wing died with them in flight.", "wing"),
		lostWrites: counterVec("lost_write_retries_total",
			"Write and curate calls sent again, under their idempotency key, because the connection to the wing died with them in flight.", "wing"),
		statsReused: counter("search_stats_reused_total",
			"Wings of cross-wing searches whose statistics came from the gateway's replica, with no statistics round trip."),
		rankAgain: counter("search_rank_rounds_again_total", "Cross-wing searches ranked again because a wing changed between its statistics and its ranking."),
		leanCalls: counter("lean_tool_calls_total",
			"Stateless (2026-07-28) tools/call requests answered without mcp-go's transport; every other request goes through mcp-go."),
		watchChanges:  counter("watch_changes_total", "Wing changes (a new change generation) the watcher saw while clients listened for notifications."),
		notified:      counter("notifications_sent_total", "notifications/resources/list_changed handed to listening clients' streams."),
		notifyDropped: counter("notifications_dropped_total", "Change notifications not sent because the client's stream was full (it is not reading it)."),
	}
	sessions := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "sessions",
		Help: "Callers (email and group set) currently in the grant cache (the session cache)."}, func() float64 { return float64(g.grants.Len()) })
	unauth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "unauthenticated_connections",
		Help: "Public connections that have not carried an authenticated request (bounded by limits.max_unauthenticated_conns)."},
		func() float64 { return float64(g.edge.Conns.Unauthenticated()) })
	connsRefused := prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "connections_refused_total",
		Help: "Public connections closed at once because limits.max_unauthenticated_conns was reached."},
		func() float64 { return float64(g.edge.Conns.Rejected()) })
	collectors := []prometheus.Collector{m.calls, m.latency, m.cacheHits, m.cacheMisses, m.mints, m.rejected,
		m.rateLimited, m.authFailures, m.httpRequests, m.leanCalls, m.lostRetries, m.lostWrites, m.statsReused, m.rankAgain,
		m.watchChanges, m.notified, m.notifyDropped, sessions, unauth, connsRefused}
	for _, w := range g.wings {
		collectors = append(collectors,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "shard_connected",
				Help: "1 while the gateway holds a live QUIC connection to the wing's shard.", ConstLabels: prometheus.Labels{"wing": w.Name}},
				func() float64 { return b2f(w.Client.Connected()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "shard_reached",
				Help: "1 once the wing's shard has answered at least once.", ConstLabels: prometheus.Labels{"wing": w.Name}},
				func() float64 { return b2f(w.Reached.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "shard_down",
				Help: "1 while the wing's shard is known unreachable: calls to it fail fast while the gateway redials in the background.", ConstLabels: prometheus.Labels{"wing": w.Name}},
				func() float64 { return b2f(w.Client.State().Down) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "shard_connection_losses_total",
				Help: "Connections to the wing's shard lost other than by a drain (crash, restart, silence).", ConstLabels: prometheus.Labels{"wing": w.Name}},
				func() float64 { return float64(w.Client.State().Losses) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "shard_dial_failures_total",
				Help: "Failed dials to the wing's shard (including background redials while it is down).", ConstLabels: prometheus.Labels{"wing": w.Name}},
				func() float64 { return float64(w.Client.State().DialFailures) }))
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// counter and counterVec are the gateway's counters, under ns.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help})
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// CacheHit, CacheMiss and Minted count the grant cache's events (route.Metrics).
func (m *metrics) CacheHit()                   { m.cacheHits.Inc() }
func (m *metrics) CacheMiss()                  { m.cacheMisses.Inc() }
func (m *metrics) Minted(wing, outcome string) { m.mints.WithLabelValues(wing, outcome).Inc() }
func (m *metrics) lostRetry(wing string, write bool) {
	if write {
		m.lostWrites.WithLabelValues(wing).Inc()
		return
	}
	m.lostRetries.WithLabelValues(wing).Inc()
}
func (m *metrics) tokenRejected(wing, kind string) { m.rejected.WithLabelValues(wing, kind).Inc() }
func (m *metrics) call(tool, wing, outcome string, d time.Duration) {
	m.calls.WithLabelValues(tool, wing, outcome).Inc()
	m.latency.WithLabelValues(tool, wing).Observe(d.Seconds())
}
