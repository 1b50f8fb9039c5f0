package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	bleveindex "github.com/blevesearch/bleve_index_api"

	brainsearch "github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
)

// Seed is the corpus and query seed of every comparison.
const Seed = 1

// DocsFromEnv returns the corpus size from BRAINSTEM_BENCH_DOCS, or def
// when it is unset.
func DocsFromEnv(def int) (int, error) {
	s := os.Getenv("BRAINSTEM_BENCH_DOCS")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bench: BRAINSTEM_BENCH_DOCS=%q: want a positive integer", s)
	}
	return n, nil
}

// BuildOurs indexes docs with shard/index.
func BuildOurs(docs []index.Doc) *index.Index {
	ix := index.New()
	for _, d := range docs {
		ix.Put(d)
	}
	return ix
}

// BleveMapping is the bleve mapping equivalent to shard/index: the
// "standard" analyzer (Unicode word segmentation, lower case, the stop_en
// list, no stemming) on a title and a body field, BM25 scoring, nothing
// stored, no term vectors, no doc values and no _all field (shard/index keeps
// none of these either).
func BleveMapping() *mapping.IndexMappingImpl {
	field := func() *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = standard.Name
		f.Store = false
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("title", field())
	dm.AddFieldMappingsAt("body", field())
	im := bleve.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = standard.Name
	im.ScoringModel = bleveindex.BM25Scoring
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	return im
}

// BuildBleve indexes docs in an in-memory bleve index in batches of 1,000.
//
// It uses scorch with an empty path (in memory, no persister), not
// bleve.NewMemOnly: NewMemOnly builds an upsidedown/gtreap index, whose
// reader does not implement BM25 field statistics, so bleve would silently
// score with TF-IDF instead.
func BuildBleve(docs []index.Doc) (bleve.Index, error) {
	bx, err := bleve.NewUsing("", BleveMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("bench: bleve index: %w", err)
	}
	batch := bx.NewBatch()
	for _, d := range docs {
		if err := batch.Index(d.ID, map[string]any{"title": d.Title, "body": d.Body}); err != nil {
			return nil, fmt.Errorf("bench: bleve batch: %w", err)
		}
		if batch.Size() >= 1000 {
			if err := bx.Batch(batch); err != nil {
				return nil, fmt.Errorf("bench: bleve batch: %w", err)
			}
			batch.Reset()
		}
	}
	if err := bx.Batch(batch); err != nil {
		return nil, fmt.Errorf("bench: bleve batch: %w", err)
	}
	return bx, nil
}

// BleveRequest is the bleve query equivalent to Index.Search(q, Limit 10):
// the query's terms ORed over title (boost TitleBoost) and body.
func BleveRequest(q string, boost float64) *bleve.SearchRequest {
	title := bleve.NewMatchQuery(q)
	title.SetField("title")
	title.SetBoost(boost)
	body := bleve.NewMatchQuery(q)
	body.SetField("body")
	req := bleve.NewSearchRequestOptions(bleve.NewDisjunctionQuery(title, body), 10, 0, false)
	return req
}

// TrueFieldLengths returns BM25 statistics for bleve whose "field
// cardinality" is the fields' total token count, so that bleve's average
// field length is the real one. (bleve 2.6 derives it from the number of
// distinct terms in the field, which at 100,000 notes makes the average body
// length 1 token.) The counts come from brainsearch.Tokenize, which yields the
// same tokens as bleve's standard analyzer on the synthetic corpus.
func TrueFieldLengths(docs []index.Doc) *search.BM25Stats {
	var title, body int
	for _, d := range docs {
		title += len(brainsearch.Tokenize(d.Title))
		body += len(brainsearch.Tokenize(d.Body))
	}
	return &search.BM25Stats{
		DocCount:         float64(len(docs)),
		FieldCardinality: map[string]int{"title": title, "body": body},
	}
}

// SearchBleve runs q on bx and returns the ids of the top 10. Non-nil stats
// replace bleve's own BM25 statistics (see TrueFieldLengths).
func SearchBleve(bx bleve.Index, q string, boost float64, stats *search.BM25Stats) ([]string, error) {
	ctx := context.Background()
	if stats != nil {
		ctx = context.WithValue(ctx, search.BM25StatsKey, stats)
	}
	res, err := bx.SearchInContext(ctx, BleveRequest(q, boost))
	if err != nil {
		return nil, fmt.Errorf("bench: bleve search %q: %w", q, err)
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}
