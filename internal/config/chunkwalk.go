package config

import (
	"sync"

	"gopkg.in/yaml.v3"
)

// walkedRecord is where a record that the walk of a chunk kept was written, and how many
// problems the walk had recorded before it: what a check for duplicates across chunks needs
// to report one where a walk of the whole file would (see takeWalked).
type walkedRecord struct {
	key  string
	pos  Position
	errs int
}

// walkedChunk is what the walk of one chunk's records found: the records it kept, and its
// parser, with their problems, warnings and work. takeWalked returns it to chunkWalks, for the
// walk of another chunk of the load.
type walkedChunk struct {
	p     parser
	zone  Zone           // the records kept
	first map[string]int // the lines of the chunk's records
}

// chunkWalks holds the walkedChunks that takeWalked is done with: a parser has a string cache
// of 64 KB, and a load walks hundreds of chunks.
var chunkWalks = sync.Pool{New: func() any {
	return &walkedChunk{p: parser{YAMLFile: &YAMLFile{}, active: map[*yaml.Node]bool{}, chunked: true}, first: map[string]int{}}
}}

// walkChunk parses the chunk c and walks its records, of the zone origin, with a parser of its
// own: the chunks of a file are walked at once on every core, then taken in order by
// takeWalked. It only reads p.
func (p *parser) walkChunk(c chunk, origin string, defs recordOpts, profiles profileSet) *walkedChunk {
	w := chunkWalks.Get().(*walkedChunk)
	*w.p.YAMLFile = YAMLFile{file: p.file, budget: p.budget, seen: w.p.seen}
	w.zone = Zone{Origin: origin, Records: w.zone.Records[:0]}
	w.p.walkDocument(&w.zone, c.decode(), defs, profiles, w.first)
	return w
}

// walkDocument walks the records of the decoded document d of a chunk into z; first holds the
// lines of the records walked before.
func (p *parser) walkDocument(z *Zone, d decodedDoc, defs recordOpts, profiles profileSet, first map[string]int) {
	for _, e := range p.entries(p.takeDocument(d), "") {
		p.records(z, e.v, defs, profiles, first)
	}
	d.arena.release() // the records keep no node
}

// takeWalked adds what the walk of a chunk found to z and p, as a walk of its records after
// those before it would have: a record written before in another chunk is a duplicate, left
// out and reported among the chunk's problems where the walk of the record started. It
// reports false when the walks together went past p's budget: then only a walk of the records
// one after another tells where, and what it reports.
func (p *parser) takeWalked(z *Zone, w *walkedChunk, first map[string]int) bool {
	defer w.release()
	c := &w.p
	p.unreadable = p.unreadable || c.unreadable
	p.work += c.work
	if c.exhausted || p.work > p.budget {
		return false
	}
	at := 0
	for i, rec := range w.zone.Records {
		r := c.walked[i]
		p.addErrors(c.errs[at:r.errs])
		at = r.errs
		if line, dup := first[rec.Name]; dup {
			p.ErrorAt(r.pos, recordPath(r.key), "duplicate record %s (first at line %d)", rec.Name, line)
			continue
		}
		first[rec.Name] = int(r.pos.Line)
		z.Records = append(z.Records, rec)
	}
	p.addErrors(c.errs[at:])
	p.addWarnings(c.warns)
	return p.work <= p.budget
}

// release forgets what w's walk found, keeping its buffers, and returns it to chunkWalks.
func (w *walkedChunk) release() {
	clear(w.zone.Records)
	clear(w.first)
	clear(w.p.seen)
	p := &w.p
	p.unreadable, p.steering, p.settings, p.checks, p.labels = false, nil, nil, nil, nil
	p.walked = p.walked[:0]
	chunkWalks.Put(w)
}

// addErrors records the problems l, which another YAMLFile of the same file recorded, as
// ErrorAt would have.
func (f *YAMLFile) addErrors(l ErrorList) {
	for _, e := range l {
		if f.see(errorKey{e.Pos, e.Msg}) {
			f.errs = append(f.errs, e)
		}
	}
}

// addWarnings records the warnings l, which another YAMLFile of the same file recorded, as
// WarnAt would have.
func (f *YAMLFile) addWarnings(l ErrorList) {
	for _, w := range l {
		if f.see(errorKey{w.Pos, "warning: " + w.Msg}) {
			f.warns = append(f.warns, w)
		}
	}
}

// see notes the problem k and reports whether it is new.
func (f *YAMLFile) see(k errorKey) bool {
	if f.seen[k] {
		return false
	}
	if f.seen == nil {
		f.seen = map[errorKey]bool{}
	}
	f.seen[k] = true
	return true
}
