// Package index is the shard's in-memory BM25 full-text index over notes.
//
// # Scoring
//
// Documents have a title and a body. Scoring is BM25F-style with k1 = 1.2 and
// b = 0.75: a document's weighted term frequency for term t is
//
//	tf(t) = bodyTF(t) + TitleBoost × titleTF(t)
//
// and its weighted length is likewise
//
//	dl = bodyLen + TitleBoost × titleLen
//
// where lengths count indexed tokens (after stop-word removal). TitleBoost is
// an integer (default 2, see [Config]) so that the summed lengths in [Stats]
// stay exact integers. A query's score for a document is the sum over the
// query's distinct terms found in it of
//
//	idf(t) × tf(t)×(k1+1) / (tf(t) + k1×(1 − b + b×dl/avgdl))
//	idf(t) = ln(1 + (N − df(t) + 0.5)/(df(t) + 0.5))
//	avgdl  = TotalLength / N
//
// Hits are ordered by score descending, then by ID ascending.
//
// # Global statistics
//
// A brain is split into wings, each with its own index. To merge results
// from several wings with consistent scores, sum every wing's [Index.Stats]
// for the query (Docs, TotalLength and each term's DocFreq) and pass the sum
// as [Options].Stats to every wing's [Index.Search]: the scores are then
// exactly those one index over the union of the wings would give, provided
// all wings use the same TitleBoost.
//
// # Tokenizer
//
// [search.Tokenize] splits text on every rune that is neither a letter nor a digit
// (unicode.IsLetter, unicode.IsDigit; combining marks continue a token so
// that scripts such as Devanagari are not split inside words), folds case
// with Unicode simple case folding (ToLower(ToUpper(r)), so "Σ", "σ" and "ς"
// are one letter), drops tokens longer than [search.MaxTokenBytes] bytes and drops
// English stop words. The stop list is bleve's "stop_en" list (the Snowball
// English list, used by bleve's "standard" analyzer) without its apostrophe
// forms, which this tokenizer can never produce, plus "s" and "t", the
// fragments those forms leave behind ("it's" → "it" "s"). There is no
// stemming.
//
// # Counting, rescoring and snippets
//
// [Index.Query] also returns Total, the number of documents that match at
// least one query term (and the filter), however few hits are returned.
// [Index.Score] scores named documents exactly as Search would, bit for bit;
// a cross-wing search ranks with Search on every wing and then renders only
// the hits that survived the merge. Each [Hit] carries the byte offset of
// its first matching body token, from which [SnippetAt] builds the same
// excerpt as [Snippet] while reading a bounded window of the body, so a
// snippet costs the same for a note of 1 KB or 2 MB.
//
// # Memory and concurrency
//
// The index keeps no document text: a term dictionary, one compact posting
// list per term (a uint32 document ordinal, the body and title term
// frequencies packed into a uint16, and the uint32 byte offset of the
// term's first body token: 10 bytes a posting; per-document counts saturate
// at [MaxBodyTF] and [MaxTitleTF]), and per document its ID, weighted length
// and the varint-encoded list of its term ids (so deletes keep document
// frequencies exact).
// Deleted and replaced documents are tombstoned and their postings are
// compacted away once tombstones reach a quarter of the ordinals.
//
// [Index.Save] writes the whole index in a binary form and [Load] reads it
// back, checking every count and invariant, so that a shard restarts
// without re-tokenizing its notes.
//
// An [Index] is safe for concurrent use; Put and Delete are visible to every
// Search that starts after they return.
package index
