// Package watch follows a wing's directories for changes made behind the
// store's back (an editor, a git pull): a Watcher reports the entries that
// changed (Linux inotify; elsewhere New fails and only the store's
// rescanner finds them), Follow gathers a burst of events into one batch
// and Classify says what the batch asks of the store: a few notes to
// re-read, the inbox to follow, _index.md to rewrite, or a full rescan.
package watch

import (
	"context"
	"sync"
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/layout"
)

// Watcher reports changes to the entries of watched directories.
type Watcher interface {
	// Add watches dir; its events carry tag.
	Add(dir, tag string) error
	// Next blocks until events arrive; it fails once closed.
	Next() ([]Event, error)
	Close() error
}

// Event is one change: entry Name of the directory tagged Tag (the hall,
// InboxTag, or "" for the wing's wiki directory), or the directory itself
// gone, or events lost.
type Event struct {
	Tag, Name string
	IsDir     bool // the entry is a directory
	DirGone   bool // the watched directory was removed or moved
	Overflow  bool // events were lost: rescan everything
}

// InboxTag tags the events of the inbox directory (no hall has the name).
const InboxTag = "inbox"

// debounce lets a burst of events (an editor's save, a git checkout)
// finish before the batch is applied.
const debounce = 20 * time.Millisecond

// Follow reads w's events until ctx ends and hands each burst, gathered
// for debounce and classified for the wing, to apply. wg counts its
// goroutines; failed is told why reading stopped before ctx ended. w is
// closed when ctx ends.
func Follow(ctx context.Context, w Watcher, wing string, wg *sync.WaitGroup, failed func(error), apply func(Changes)) {
	batches := make(chan []Event, 64)
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(batches)
		for {
			evs, err := w.Next()
			if err != nil {
				if ctx.Err() == nil {
					failed(err)
				}
				return
			}
			select {
			case batches <- evs:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		gather(ctx, batches, func(evs []Event) { apply(Classify(wing, evs)) })
	}()
	go func() { // unblock the reader when the store closes
		<-ctx.Done()
		w.Close()
	}()
}

// gather hands apply each burst of batches until ctx ends or the reader
// stops.
func gather(ctx context.Context, batches <-chan []Event, apply func([]Event)) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var evs []Event
		select {
		case <-ctx.Done():
			return
		case b, ok := <-batches:
			if !ok {
				return
			}
			evs = b
		}
		timer.Reset(debounce)
	burst:
		for {
			select {
			case <-ctx.Done():
				return
			case b, ok := <-batches:
				if !ok {
					break burst
				}
				evs = append(evs, b...)
			case <-timer.C:
				break burst
			}
		}
		apply(evs)
	}
}

// Changes is what a batch of events asks of the store.
type Changes struct {
	Rescan bool              // the wing's structure changed, or events were lost: rescan it all
	TOC    bool              // someone else edited _index.md
	Inbox  bool              // the inbox changed
	Notes  map[brain.ID]bool // the note files that changed
}

// Classify says what the events evs of wing's directories ask for.
func Classify(wing string, evs []Event) Changes {
	c := Changes{Notes: map[brain.ID]bool{}}
	for _, ev := range evs {
		switch {
		case ev.Overflow || ev.DirGone:
			c.Rescan = true
		case layout.Hidden(ev.Name):
		case ev.Tag == InboxTag:
			c.Inbox = true
		case ev.Tag == "":
			if ev.Name == brain.IndexSlug+brain.NoteExt {
				c.TOC = true
			} else {
				c.Rescan = true // a hall (or a stray entry) appeared or went
			}
		case ev.IsDir:
			c.Rescan = true
		default:
			slug, err := layout.NoteFile(ev.Name)
			if err != nil {
				c.Rescan = true // reported as skipped by the scan
				continue
			}
			c.Notes[brain.ID{Wing: wing, Hall: ev.Tag, Slug: slug}] = true
		}
	}
	return c
}
