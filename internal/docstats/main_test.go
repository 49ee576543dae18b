package main

import (
	"go/parser"
	"go/token"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		para  string
		words []int
	}{
		{"One two three. Four five.", []int{3, 2}},
		{"Is it? Yes! No.", []int{2, 1, 1}},
		{"It waits (see Client.With). Then it goes.", []int{4, 3}},
		{`He said "stop." Then left.`, []int{3, 2}},
		{"Use e.g. a view, i.e. one per caller.", []int{8}},
		{"Probes double (1, 1, 2, 4, ...) each round.", []int{8}},
		{"Version 1.3.0 of rail0.Client works", []int{5}},
		{"A — B.", []int{2}},
		{"", nil},
	} {
		got := split("p", tt.para)
		var words []int
		for _, s := range got {
			words = append(words, s.words)
		}
		if len(words) != len(tt.words) {
			t.Errorf("%q: %v, want %v", tt.para, words, tt.words)
			continue
		}
		for i := range words {
			if words[i] != tt.words[i] {
				t.Errorf("%q: %v, want %v", tt.para, words, tt.words)
				break
			}
		}
	}
}

func TestSummarize(t *testing.T) {
	var ss []sentence
	for i := 1; i <= 10; i++ {
		ss = append(ss, sentence{words: i * 5}) // 5, 10, ..., 50: two over 40
	}
	s := summarize(ss)
	if s.n != 10 || s.avg != 27.5 || s.p90 != 45 || s.longShare != 0.2 {
		t.Errorf("summarize = %+v", s)
	}
	if (summarize(nil) != stats{}) {
		t.Error("no sentences should sum to zero")
	}
}

// TestDocComments takes what go doc shows (the package clause, declarations,
// group specs, fields and interface methods) and leaves code blocks,
// headings and comments inside functions out.
func TestDocComments(t *testing.T) {
	src := `// Package p is one.
package p

// T is two words long. It has
// three more.
//
// # A heading is not prose
//
//	code := "is not prose either."
type T struct {
	// F is a field.
	F int
	G struct {
		// H is nested.
		H int
	}
}

// I is an interface.
type I interface {
	// M is a method.
	M()
}

const (
	// C is a constant.
	C = 1
)

// Fn does it:
//   - first this;
//   - then that.
func Fn() {
	// Not a doc comment.
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, g := range docComments(f) {
		for _, s := range sentences("p.go", g.Text()) {
			got = append(got, s.words)
		}
	}
	want := []int{4, 5, 4, 4, 3, 4, 4, 4, 3, 2, 2}
	if len(got) != len(want) {
		t.Fatalf("sentences of %v words, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("sentences of %v words, want %v", got, want)
		}
	}
}
