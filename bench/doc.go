// Package bench compares the shard's BM25 index (shard/index) with bleve v2
// on the same synthetic corpus (shard/corpus): index build time and heap,
// query latency for 1-, 2- and 4-term queries, and top-10 overlap. It is a
// separate module so that bleve never enters the product's go.mod.
package bench
