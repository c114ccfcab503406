package archdoc

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

var (
	// inlineLink matches [text](target) and ![alt](target), with an optional title.
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// referenceLink matches a reference definition, [name]: target.
	referenceLink = regexp.MustCompile(`(?m)^\s*\[[^\]]+\]:\s+(\S+)`)
	// codeSpan matches inline code; one that starts with ../ reads as a path.
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// scheme marks a target that is a URL, not a path.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// markdownFiles lists the repository's Markdown files, leaving out hidden
// directories (.git, a local Postgres cluster) and what tools write.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "demo-out") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// withoutFences drops fenced code blocks: their text is code, not links.
func withoutFences(text string) string {
	var b strings.Builder
	inFence := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// anchors lists the fragment ids GitHub gives the headings of a Markdown
// text: lower case, letters, digits, '-' and '_' kept, spaces made '-', the
// rest dropped, and a repeated id numbered from -1.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for line := range strings.SplitSeq(withoutFences(text), "\n") {
		heading := strings.TrimLeft(line, "#")
		if heading == line || !strings.HasPrefix(heading, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			ids[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

// TestMarkdownLinksStayInTheClone checks every relative link of every
// Markdown file, and every inline-code path that climbs out of its directory
// (`../x`): each must name a file or directory that exists inside the
// repository, since a reader of a fresh clone has nothing else, and a
// fragment of a Markdown file must name one of its headings.
func TestMarkdownLinksStayInTheClone(t *testing.T) {
	root := moduleRoot(t)
	files := markdownFiles(t, root)
	require.NotEmpty(t, files)
	checked := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		prose := withoutFences(string(raw))
		var targets []string
		for _, m := range referenceLink.FindAllStringSubmatch(prose, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range codeSpan.FindAllStringSubmatch(prose, -1) {
			if strings.HasPrefix(m[1], "../") {
				targets = append(targets, m[1])
			}
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(prose, ""), -1) {
			targets = append(targets, m[1])
		}
		rel, err := filepath.Rel(root, file)
		require.NoError(t, err)
		for _, target := range targets {
			if scheme.MatchString(target) {
				continue
			}
			target, fragment, _ := strings.Cut(target, "#")
			if target == "" {
				require.True(t, anchors(string(raw))[fragment], "%s links to #%s, which is none of its headings", rel, fragment)
				checked++
				continue
			}
			var path string
			if strings.HasPrefix(target, "/") {
				path = filepath.Join(root, target)
			} else {
				path = filepath.Join(filepath.Dir(file), target)
			}
			inside, err := filepath.Rel(root, path)
			require.NoError(t, err)
			require.False(t, inside == ".." || strings.HasPrefix(inside, "../"),
				"%s points outside the repository: %s", rel, target)
			_, err = os.Stat(path)
			require.NoError(t, err, "%s links to %s, which does not exist", rel, target)
			if fragment != "" && strings.HasSuffix(path, ".md") {
				linked, err := os.ReadFile(path)
				require.NoError(t, err)
				require.True(t, anchors(string(linked))[fragment], "%s links to %s#%s, which is none of its headings", rel, target, fragment)
			}
			checked++
		}
	}
	require.NotZero(t, checked, "no relative link found in %d Markdown files", len(files))
}
