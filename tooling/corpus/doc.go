// Package corpus generates deterministic synthetic brains for benchmarks and
// tests: notes whose words follow a Zipfian distribution over a vocabulary
// synthesised from syllables, with realistic title and body lengths, spread
// over the five halls, and queries drawn from the same vocabulary.
//
// The same seed always yields the same output (math/rand/v2 PCG streams, no
// map iteration, no clock). The model:
//
//   - Vocabulary: [VocabularySize] words. The first ranks are real English
//     function words ("the", "of", "and", …) so stop-word handling matters;
//     the rest are made of 1–3 syllables, shorter at frequent ranks.
//   - Word choice: Zipf (s = 1.07, v = 2) over the ranks, plus burstiness:
//     every note has 4–10 topic words (mid-frequency ranks) that make up
//     about 12% of its body and most of its title.
//   - Titles: 3–10 words. Bodies: log-normal around 240 words (σ = 0.5),
//     clamped to [40, 3000]; 3% of notes are long reads of 800–3,000 words.
//     Paragraphs of sentences, with an occasional "## " heading or "- " list.
//   - Halls: facts 35%, decisions 20%, sources 20%, failures 15%,
//     hypotheses 10%.
//
// [HeavyNotes] is the same model with heavy-tailed sizes, for benchmarks
// that must see what real brains hold: bodies log-normal around 2,400 bytes
// (σ = 0.95, so a p99 near 23 KB) and one note in 2,000 of 256 KiB to
// 2 MiB. [HeavySizes] draws the sizes alone. At 20,000 notes that is
// about 88 MB of text.
package corpus
