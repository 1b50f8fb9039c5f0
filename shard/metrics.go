package shard

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/store/hits"
)

// metrics are a shard's own Prometheus series (the binary adds Go and
// process metrics); registered only when Config.Metrics is set.
type metrics struct {
	policyReloads *prometheus.CounterVec
	mints         *prometheus.CounterVec
	staleGrants   prometheus.Counter
}

const ns = "brainstem_shard"

func newMetrics(reg prometheus.Registerer, s *Service) (*metrics, error) {
	m := &metrics{
		policyReloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "policy_reloads_total",
			Help: "Policy file reloads by result: ok (a new policy is in force) or error (the file was refused; the previous policy stays)."},
			[]string{"result"}),
		mints: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "mints_total",
			Help: "Mint requests answered by outcome: ok, no_access (the policy grants nothing), bad_request."},
			[]string{"outcome"}),
		staleGrants: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "stale_grant_refusals_total",
			Help: "Calls refused because the policy in force no longer grants the token's capability (the gateway re-mints)."}),
	}
	if reg == nil {
		return m, nil
	}
	stats := func(f func(st idempotency.Stats) float64) func() float64 {
		return func() float64 { return f(s.journal.Stats()) }
	}
	hitStats := func(f func(st hits.Stats) int64) func() float64 {
		return func() float64 { return float64(f(s.store.HitCacheStats())) }
	}
	collectors := []prometheus.Collector{m.policyReloads, m.mints, m.staleGrants,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "hit_cache_hits_total",
			Help: "Search hits rendered from memory (no open or read of the note)."}, hitStats(func(st hits.Stats) int64 { return st.Hits })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "hit_cache_misses_total",
			Help: "Search hits whose note version was not in memory (rendered from the file)."}, hitStats(func(st hits.Stats) int64 { return st.Misses })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "hit_cache_bytes",
			Help: "Estimated memory held by the hit cache (bounded by --hit-cache-bytes)."}, hitStats(func(st hits.Stats) int64 { return st.Bytes })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "policy_loaded_timestamp_seconds",
			Help: "When the policy in force was loaded (Unix seconds)."},
			func() float64 { _, at := s.PolicySHA256(); return float64(at.UnixNano()) / 1e9 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "idempotency_keys",
			Help: "Idempotency keys remembered."}, stats(func(st idempotency.Stats) float64 { return float64(st.Keys) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "idempotency_journal_bytes",
			Help: "Size of the idempotency journal file."}, stats(func(st idempotency.Stats) float64 { return float64(st.FileBytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "idempotency_replays_total",
			Help: "Write calls answered with the answer recorded for their idempotency key."}, stats(func(st idempotency.Stats) float64 { return float64(st.Replays) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "idempotency_conflicts_total",
			Help: "Write calls refused because their idempotency key was used with other arguments."}, stats(func(st idempotency.Stats) float64 { return float64(st.Conflicts) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "idempotency_evictions_total",
			Help: "Idempotency keys forgotten before their retention ended, to stay within the count and memory bounds."}, stats(func(st idempotency.Stats) float64 { return float64(st.Evictions) })),
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
