package docs_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// linkedPages are the Markdown files whose relative links TestLinks
// follows: the README, every page under docs/ and the READMEs under
// deployments/, as paths from the repository root.
func linkedPages(t *testing.T, root string) []string {
	t.Helper()
	pages := []string{"README.md"}
	for _, dir := range []string{"docs", "deployments"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".md") {
				return nil
			}
			if dir == "deployments" && d.Name() != "README.md" {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			pages = append(pages, filepath.ToSlash(rel))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pages
}

var (
	// inlineLink matches [text](target) and ![alt](target); the target
	// ends at the first space (a title may follow) or closing parenthesis.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)`)
	// refLink matches a reference definition: [name]: target
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// htmlAnchor matches <a name="x"> and id="x", anchors a page may set by hand.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// page is one Markdown file: its links and the anchors its headings make.
type page struct {
	links   []link
	anchors map[string]bool
}

type link struct {
	line   int
	target string
}

// readPage reads a Markdown file, skipping fenced code blocks and code
// spans, where brackets and parentheses are not links.
func readPage(t *testing.T, file string) page {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	var fence string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			p.anchors[m[1]] = true
		}
		if h, ok := heading(line); ok {
			a := slug(h)
			if k := seen[a]; k > 0 {
				p.anchors[a+"-"+strconv.Itoa(k)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		}
		text := codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			p.links = append(p.links, link{n, m[1]})
		}
		if m := refLink.FindStringSubmatch(text); m != nil {
			p.links = append(p.links, link{n, m[1]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return p
}

// heading returns the text of an ATX heading line ("## Text").
func heading(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || !strings.HasPrefix(t, "#") {
		return "", false
	}
	level := len(t) - len(strings.TrimLeft(t, "#"))
	if level > 6 || (len(t) > level && t[level] != ' ' && t[level] != '\t') {
		return "", false
	}
	h := strings.TrimSpace(t[level:])
	h = strings.TrimSpace(strings.TrimRight(h, "#")) // closing sequence
	return h, true
}

// slug is GitHub's anchor of a heading: the text without Markdown
// formatting, lower case, every character but letters, digits, spaces,
// hyphens and underscores dropped, spaces as hyphens.
func slug(h string) string {
	h = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1") // a link: its text
	h = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(h, "")                   // inline HTML
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestLinks follows every relative link of the README, docs/ and the
// deployments READMEs: the file (or folder) must exist, and an #anchor into
// a Markdown file must name one of its headings. Absolute URLs are not
// fetched.
func TestLinks(t *testing.T) {
	const root = ".."
	pages := map[string]page{}
	get := func(rel string) page {
		p, ok := pages[rel]
		if !ok {
			p = readPage(t, filepath.Join(root, rel))
			pages[rel] = p
		}
		return p
	}
	for _, rel := range linkedPages(t, root) {
		for _, l := range get(rel).links {
			if scheme.MatchString(l.target) || strings.HasPrefix(l.target, "//") {
				continue // http:, https:, mailto:, …
			}
			file, anchor, _ := strings.Cut(l.target, "#")
			target := rel
			if file != "" {
				target = path.Clean(path.Join(path.Dir(rel), file))
				if strings.HasPrefix(target, "../") {
					t.Errorf("%s:%d: %s leaves the repository", rel, l.line, l.target)
					continue
				}
				fi, err := os.Stat(filepath.Join(root, target))
				if err != nil {
					t.Errorf("%s:%d: %s: no such file", rel, l.line, l.target)
					continue
				}
				if fi.IsDir() {
					if anchor != "" {
						t.Errorf("%s:%d: %s: an anchor into a folder", rel, l.line, l.target)
					}
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if !get(target).anchors[anchor] {
				t.Errorf("%s:%d: %s: %s has no heading with the anchor #%s", rel, l.line, l.target, target, anchor)
			}
		}
	}
}

// TestSlug pins GitHub's anchors for headings of the kinds the docs use.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Preflight: rostrum check":                                          "preflight-rostrum-check",
		"Alert: RostrumConsumerLagHigh":                                     "alert-rostrumconsumerlaghigh",
		"12. Recording control and layout parameters (seed 003 items 6, 7)": "12-recording-control-and-layout-parameters-seed-003-items-6-7",
		"`--top-n` and [links](x.md)":                                       "--top-n-and-links",
		"Runbook: Redis lost its data":                                      "runbook-redis-lost-its-data",
		"Snake_case, über & more":                                           "snake_case-über--more",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
