// Package search is brain_query as a protocol of its own: everything a
// search means, on the shard and on the gateway, in one place.
//
//   - The terms of a query (Terms, Tokenize), which the indexes store and a
//     cross-wing search computes once, at the gateway.
//   - brain_query's declaration (Spec), in its own shape and in the
//     predecessor's ({query, limit}: the inbox and the wiki, 5 hits, the
//     hits again as "results"), and its arguments as one Query, decoded,
//     checked and tokenized once.
//   - BM25 corpus statistics (Stats), which add up across wings, and the
//     gateway's replica of each wing's (Replica), kept exact by the index
//     generation every answer carries, so a search skips the statistics
//     round trip while the wings have not changed.
//   - The three steps of a search across wings (protocol.go): Stats, Rank
//     (ids and scores from the index alone, under the global statistics)
//     and Fetch (the rendered hits of the ids that survive the merge),
//     answered on the shard by ServeStats, ServeRank and ServeFetch over a
//     Source, and framed by proto.
//   - The shapes of hits and results, the merge of ranked hits across wings
//     and the cross-wing envelope, written around each wing's hit bytes.
//
// The rankings of a cross-wing search are exactly those of one index over
// the union of the wings: scores are computed with the summed statistics,
// and the merge orders by score, then key.
package search
