package brain

// QueryTool is the name of the search tool, the one tool the gateway runs
// across wings (see docs/protocol.md, "Cross-wing search").
const QueryTool = "brain_query"

// brain_query's limit argument: the default, and the most hits one call
// returns, in one wing or merged across wings. The gateway refuses a
// larger limit before it asks any wing; a shard refuses it too.
const (
	QueryDefaultLimit = 10
	QueryMaxLimit     = 50
)

// Hit is one hit of a brain_query result, its fields in this order:
// {"id","wing","hall","title","score","snippet","path","content_hash"}. A
// cross-wing search carries each wing's hit bytes unchanged and reads only
// HitKey's fields.
type Hit struct {
	ID          string  `json:"id"`
	Wing        string  `json:"wing"`
	Hall        string  `json:"hall"`
	Title       string  `json:"title"`
	Score       float64 `json:"score"`
	Snippet     string  `json:"snippet"`
	Path        string  `json:"path"`
	ContentHash string  `json:"content_hash"`
}

// HitKey is what merging hits across wings reads of each hit: the note id
// and its score under the global statistics. Hits sort by score
// (descending), then id (ascending).
type HitKey struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// QueryResult is a brain_query result: {"hits":[…],"total"}, total being
// the number of matching notes however many hits are returned.
type QueryResult struct {
	Hits  []Hit `json:"hits"`
	Total int64 `json:"total"`
}

// RankResult is a shard's answer to the rank step of a cross-wing search:
// {"ranked":[{"id","score"}],"total"}, best first, from the index alone.
// "ranked" is always an array (never null), which tells it from a whole
// brain_query result.
type RankResult struct {
	Ranked []HitKey `json:"ranked"`
	Total  int64    `json:"total"`
}

// FetchResult is a shard's answer to the fetch step of a cross-wing
// search: {"hits":[…]}, the hits of the requested ids, each exactly as
// brain_query renders it.
type FetchResult struct {
	Hits []Hit `json:"hits"`
}

// Less orders two hits for a merged result: higher score first, then
// smaller id.
func (a HitKey) Less(b HitKey) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}
