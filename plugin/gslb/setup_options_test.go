package gslb

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/docs"
)

// corefileChapter returns the "## Corefile" chapter of docs/configuration.md.
func corefileChapter(t *testing.T) string {
	t.Helper()
	_, chapter, ok := strings.Cut(docs.Configuration, "\n## Corefile\n")
	if !ok {
		t.Fatal(`configuration.md has no "## Corefile" chapter`)
	}
	chapter, _, _ = strings.Cut(chapter, "\n## ")
	return chapter
}

// TestOptionsDocumented checks the option tables against docs/configuration.md's Corefile
// chapter: no name is in two tables, every option is written there (in code, as `name` or
// `name ARGS`), and every option its option tables name is one of ours.
func TestOptionsDocumented(t *testing.T) {
	var names []string
	for _, g := range (&Block{}).optionGroups("") {
		for name := range g.table {
			if slices.Contains(names, name) {
				t.Errorf("option %s is in two tables", name)
			}
			names = append(names, name)
		}
	}
	chapter := corefileChapter(t)
	for _, name := range names {
		if !strings.Contains(chapter, "`"+name+"`") && !strings.Contains(chapter, "`"+name+" ") {
			t.Errorf("option %s is not in configuration.md's Corefile chapter", name)
		}
	}
	// The Option cells of the chapter's option tables (the tables of two options a row have
	// the second in their fourth column): each code span in them that starts with a name. A
	// name ending in _ (api_*) is a group of options.
	code := regexp.MustCompile("`([a-z0-9_]+)[^`]*`")
	documented, inTable, twoPerRow := 0, false, false
	for line := range strings.SplitSeq(chapter, "\n") {
		switch {
		case strings.HasPrefix(line, "| Option |"):
			inTable, twoPerRow = true, strings.Count(line, "| Option |") == 2
			continue
		case !strings.HasPrefix(line, "|"):
			inTable = false
		}
		if !inTable {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, " "), "|")
		for i, cell := range cells {
			if i != 1 && (!twoPerRow || i != 4) {
				continue
			}
			for _, m := range code.FindAllStringSubmatch(cell, -1) {
				if strings.HasSuffix(m[1], "_") {
					continue
				}
				documented++
				if !slices.Contains(names, m[1]) {
					t.Errorf("configuration.md documents option %s, which no table parses", m[1])
				}
			}
		}
	}
	if documented < len(names)/2 {
		t.Errorf("configuration.md's option tables name %d options, not the tens of the tables", documented)
	}
}
