// Command docstats measures the sentences of the repository's doc
// comments. It reports how many words a sentence has on average and at the
// 90th percentile. It also reports how many sentences run over 40 words.
// The house rule is short sentences: about 11 words, never over 40.
// .ci/docstats runs this.
//
// It reads every non-test .go file under the given directories (default
// "."). It skips testdata, vendor and directories whose name starts with
// "." or "_". From each file it takes the doc comments that go doc shows:
//   - the package clause's;
//   - each top-level declaration's (func, type, var, const, and each spec
//     of a group);
//   - each struct field's and interface method's.
//
// Comments inside function bodies and trailing line comments are not doc
// comments and are left out.
//
// A comment is parsed as go/doc/comment parses it. Code blocks and headings
// are not prose and are skipped. A paragraph and each list item are split
// into sentences at a ".", "?" or "!" that ends a word. The mark may be
// followed by a closing bracket or quote. A few abbreviations do not end a
// sentence. A word is a run of non-space characters with a letter or a
// digit in it.
//
// With -fail it exits 1 when the average is over -max-avg. It also exits 1
// when the share of sentences over 40 words reaches -max-long percent.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// longWords is the length from which a sentence counts as long.
const longWords = 40

func main() {
	fail := flag.Bool("fail", false, "exit 1 when a limit is crossed")
	maxAvg := flag.Float64("max-avg", 14, "the largest average of words per sentence -fail accepts")
	maxLong := flag.Float64("max-long", 1, "the share of sentences over 40 words, in percent, at which -fail fails")
	top := flag.Int("top", 0, "list this many of the longest sentences, with their place")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var all []sentence
	files := 0
	for _, dir := range dirs {
		got, n, err := scan(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "docstats:", err)
			os.Exit(2)
		}
		all, files = append(all, got...), files+n
	}
	s := summarize(all)
	report(os.Stdout, s, files)
	if *top > 0 {
		longest(os.Stdout, all, *top)
	}
	if *fail && (s.avg > *maxAvg || s.longShare*100 >= *maxLong) {
		fmt.Printf("docstats: FAIL: want an average of at most %.1f words and under %.1f%% of sentences over %d words\n",
			*maxAvg, *maxLong, longWords)
		os.Exit(1)
	}
}

// sentence is one sentence of a doc comment and where it is.
type sentence struct {
	pos   string
	words int
	text  string
}

// stats sums up the sentences.
type stats struct {
	n         int
	avg       float64
	p90       int
	longShare float64
}

// summarize computes the average and the 90th percentile (nearest rank).
// It also computes the share of long sentences.
func summarize(ss []sentence) stats {
	if len(ss) == 0 {
		return stats{}
	}
	lens := make([]int, len(ss))
	total, long := 0, 0
	for i, s := range ss {
		lens[i] = s.words
		total += s.words
		if s.words > longWords {
			long++
		}
	}
	slices.Sort(lens)
	rank := (90*len(lens) + 99) / 100 // ceil(0.9 n), 1-based
	return stats{
		n:         len(ss),
		avg:       float64(total) / float64(len(ss)),
		p90:       lens[rank-1],
		longShare: float64(long) / float64(len(ss)),
	}
}

func report(w io.Writer, s stats, files int) {
	fmt.Fprintf(w, "docstats: %d sentences in the doc comments of %d files: %.1f words on average, p90 %d, %.1f%% over %d words\n",
		s.n, files, s.avg, s.p90, s.longShare*100, longWords)
}

// longest lists the n longest sentences, longest first.
func longest(w io.Writer, ss []sentence, n int) {
	ss = slices.Clone(ss)
	slices.SortStableFunc(ss, func(a, b sentence) int { return b.words - a.words })
	for _, s := range ss[:min(n, len(ss))] {
		fmt.Fprintf(w, "%4d %s: %s\n", s.words, s.pos, s.text)
	}
}

// scan reads the doc comments of the Go files under dir.
func scan(dir string) ([]sentence, int, error) {
	var out []sentence
	files := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, g := range docComments(f) {
			out = append(out, sentences(fset.Position(g.Pos()).String(), g.Text())...)
		}
		return nil
	})
	return out, files, err
}

// docComments returns the doc comments of f that go doc shows.
func docComments(f *ast.File) []*ast.CommentGroup {
	var out []*ast.CommentGroup
	add := func(g *ast.CommentGroup) {
		if g != nil {
			out = append(out, g)
		}
	}
	add(f.Doc)
	var fields func(ast.Expr)
	fields = func(e ast.Expr) {
		var list *ast.FieldList
		switch t := e.(type) {
		case *ast.StructType:
			list = t.Fields
		case *ast.InterfaceType:
			list = t.Methods
		case *ast.StarExpr:
			fields(t.X)
			return
		case *ast.ArrayType:
			fields(t.Elt)
			return
		default:
			return
		}
		for _, fld := range list.List {
			add(fld.Doc)
			fields(fld.Type)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(d.Doc)
		case *ast.GenDecl:
			add(d.Doc)
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					add(s.Doc)
					fields(s.Type)
				case *ast.ValueSpec:
					add(s.Doc)
				}
			}
		}
	}
	return out
}

// sentences splits a doc comment's prose into sentences.
func sentences(pos, text string) []sentence {
	var p comment.Parser
	var out []sentence
	var blocks func([]comment.Block)
	blocks = func(bs []comment.Block) {
		for _, b := range bs {
			switch b := b.(type) {
			case *comment.Paragraph:
				out = append(out, split(pos, plain(b.Text))...)
			case *comment.List:
				for _, item := range b.Items {
					blocks(item.Content)
				}
			}
		}
	}
	blocks(p.Parse(text).Content)
	return out
}

// plain is the text of a paragraph without its markup.
func plain(ts []comment.Text) string {
	var b strings.Builder
	for _, t := range ts {
		switch t := t.(type) {
		case comment.Plain:
			b.WriteString(string(t))
		case comment.Italic:
			b.WriteString(string(t))
		case *comment.Link:
			b.WriteString(plain(t.Text))
		case *comment.DocLink:
			b.WriteString(plain(t.Text))
		}
	}
	return b.String()
}

// abbreviations end with a period that does not end a sentence.
var abbreviations = map[string]bool{"e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "cf.": true, "approx.": true, "no.": true}

// split cuts a paragraph into sentences.
func split(pos, para string) []sentence {
	var out []sentence
	var cur []string
	flush := func() {
		if n := countWords(cur); n > 0 {
			out = append(out, sentence{pos: pos, words: n, text: strings.Join(cur, " ")})
		}
		cur = cur[:0]
	}
	for _, w := range strings.Fields(para) {
		cur = append(cur, w)
		if endsSentence(w) {
			flush()
		}
	}
	flush()
	return out
}

// endsSentence reports whether the word w ends a sentence.
func endsSentence(w string) bool {
	core := strings.TrimRight(w, `)]"'”’*_`+"`")
	if core == "" || strings.HasSuffix(core, "...") || abbreviations[strings.ToLower(core)] {
		return false
	}
	switch core[len(core)-1] {
	case '.', '?', '!':
		return true
	}
	return false
}

// countWords counts the words with a letter or a digit.
func countWords(ws []string) int {
	n := 0
	for _, w := range ws {
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			n++
		}
	}
	return n
}
