package lazy

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzCanonical: a name checkNames accepts is the very name estargz makes
// of it (path.Clean of "/"+name), a local path or the root: no accepted
// name is moved by the cleaning, so the tree lazyfs shows is the one a
// full pull unpacks.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"etc/ok", "./etc/ok", "etc/", "./", ".", "", "../x", "/abs", "a//b", "a/./b",
		"a/..", "..", "a/b/", ".wh.", "x\x00y", "./../x", "././x"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, name string, dir bool) {
		n, err := canonical(name, dir)
		if err != nil {
			return
		}
		if cleaned := strings.TrimPrefix(path.Clean("/"+name), "/"); cleaned != n {
			t.Fatalf("%q (dir %v) accepted as %q, but estargz makes it %q", name, dir, n, cleaned)
		}
		if n != "" && !filepath.IsLocal(n) {
			t.Fatalf("%q accepted as %q, not a local path", name, n)
		}
		if n == "" && !dir {
			t.Fatalf("%q: the root accepted for a non-directory", name)
		}
	})
}
