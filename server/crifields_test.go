package server

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criFieldsDoc is the audit of every CRI request field and enum value.
const criFieldsDoc = "../docs/CRI-FIELDS.md"

// criSurface is what the CRI's own descriptors say a runtime may be sent:
// every field of every message reachable from the request of any RPC of
// RuntimeService and ImageService ("Message.field"; a message without
// fields is the bare "Message"), and every value of every enum those fields
// carry. Names are the descriptors' full names without the package
// ("SecurityProfile.ProfileType" for a nested enum).
type criSurface struct {
	fields map[string]bool                // "Message.field", or "Message" for one without fields
	enums  map[string]map[string]bool     // enum -> its value names
	via    map[string]string              // field key or enum -> the first request path found to reach it
	seen   map[protoreflect.FullName]bool // messages walked
}

func readCRISurface(t *testing.T) *criSurface {
	t.Helper()
	fd := runtimeapi.File_staging_src_k8s_io_cri_api_pkg_apis_runtime_v1_api_proto
	s := &criSurface{fields: map[string]bool{}, enums: map[string]map[string]bool{},
		via: map[string]string{}, seen: map[protoreflect.FullName]bool{}}
	services := 0
	for i := 0; i < fd.Services().Len(); i++ {
		svc := fd.Services().Get(i)
		if n := svc.Name(); n != "RuntimeService" && n != "ImageService" {
			continue
		}
		services++
		for j := 0; j < svc.Methods().Len(); j++ {
			in := svc.Methods().Get(j).Input()
			s.walk(in, string(in.Name()))
		}
	}
	if services != 2 || len(s.fields) < 200 || len(s.enums) < 5 {
		t.Fatalf("the CRI descriptor gave %d services, %d fields, %d enums", services, len(s.fields), len(s.enums))
	}
	return s
}

// shortName is a descriptor's full name without the CRI's package.
func shortName(d protoreflect.Descriptor) string {
	return strings.TrimPrefix(string(d.FullName()), string(d.ParentFile().Package())+".")
}

// walk records every field of md and of the messages and enums it carries
// (a map's entry message is not a message of the CRI: its value is walked).
func (s *criSurface) walk(md protoreflect.MessageDescriptor, path string) {
	if s.seen[md.FullName()] {
		return
	}
	s.seen[md.FullName()] = true
	if md.Fields().Len() == 0 {
		s.add(shortName(md), path)
	}
	for i := 0; i < md.Fields().Len(); i++ {
		f := md.Fields().Get(i)
		s.add(shortName(md)+"."+string(f.Name()), path+"."+string(f.Name()))
		if f.IsMap() {
			f = f.MapValue()
		}
		s.walkType(f, path+"."+string(f.Name()))
	}
}

func (s *criSurface) walkType(f protoreflect.FieldDescriptor, path string) {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		s.walk(f.Message(), path)
	case protoreflect.EnumKind:
		ed := f.Enum()
		if s.enums[shortName(ed)] != nil {
			return
		}
		values := map[string]bool{}
		for i := 0; i < ed.Values().Len(); i++ {
			values[string(ed.Values().Get(i).Name())] = true
		}
		s.enums[shortName(ed)] = values
		s.via[shortName(ed)] = path
	}
}

func (s *criSurface) add(key, path string) {
	s.fields[key] = true
	if _, ok := s.via[key]; !ok {
		s.via[key] = path
	}
}

// criDoc is what docs/CRI-FIELDS.md accounts for: one table row per field
// ("| `Message.field` | status | where | test |") and one per enum
// ("| `Enum` | `VALUE`, `VALUE` | status | where | test |", under
// "## Enum values"), each status beginning with a status word.
type criDoc struct {
	fields   map[string]string          // key -> status
	enums    map[string]map[string]bool // enum -> listed values
	problems []string                   // rows that do not parse
}

var (
	docKey       = regexp.MustCompile("^`([A-Z][A-Za-z0-9]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)*)`")
	docValue     = regexp.MustCompile("^`([A-Za-z][A-Za-z0-9_]*)`$")
	statusWords  = []string{"honoured", "partly", "ignored-by-design", "not honoured", "n/a", "no fields"}
	headerPrefix = []string{"| Field |", "| Enum |", "|---"}
)

func parseCRIDoc(text string) *criDoc {
	d := &criDoc{fields: map[string]string{}, enums: map[string]map[string]bool{}}
	inEnums := false
	for n, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "## ") {
			inEnums = strings.TrimSpace(line) == "## Enum values"
		}
		if !strings.HasPrefix(line, "|") || slices.ContainsFunc(headerPrefix, func(p string) bool { return strings.HasPrefix(line, p) }) {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if err := d.addRow(cells, inEnums); err != "" {
			d.problems = append(d.problems, fmt.Sprintf("line %d: %s: %s", n+1, err, line))
		}
	}
	return d
}

// addRow reads one table row; it returns what is wrong with it.
func (d *criDoc) addRow(cells []string, isEnum bool) string {
	want := 4
	if isEnum {
		want = 5
	}
	if len(cells) != want {
		return fmt.Sprintf("%d cells, not %d", len(cells), want)
	}
	m := docKey.FindStringSubmatch(cells[0])
	if m == nil {
		return "the first cell does not begin with a `Message.field` or `Enum` key"
	}
	status := cells[1]
	if isEnum {
		status = cells[2]
	}
	if !slices.ContainsFunc(statusWords, func(w string) bool { return strings.HasPrefix(status, w) }) {
		return "the status begins with none of " + strings.Join(statusWords, ", ")
	}
	if !isEnum {
		if _, dup := d.fields[m[1]]; dup {
			return "a second row for " + m[1]
		}
		d.fields[m[1]] = status
		return ""
	}
	if d.enums[m[1]] != nil {
		return "a second row for " + m[1]
	}
	d.enums[m[1]] = map[string]bool{}
	for _, v := range strings.Split(cells[1], ", ") {
		vm := docValue.FindStringSubmatch(strings.TrimSpace(v))
		if vm == nil {
			return fmt.Sprintf("value %q is not a `VALUE`", v)
		}
		d.enums[m[1]][vm[1]] = true
	}
	return ""
}

// auditProblems lists, sorted, every field and enum value of the CRI the doc
// does not account for, every row naming one the CRI no longer has, and
// every row that does not parse.
func auditProblems(s *criSurface, d *criDoc) []string {
	out := slices.Clone(d.problems)
	for k := range s.fields {
		if _, ok := d.fields[k]; !ok {
			out = append(out, fmt.Sprintf("missing: request field %s (reached as %s)", k, s.via[k]))
		}
	}
	for k := range d.fields {
		if !s.fields[k] {
			out = append(out, "stale: the doc has a row for "+k+", which no request of the CRI carries")
		}
	}
	for e, values := range s.enums {
		for v := range values {
			if !d.enums[e][v] {
				out = append(out, fmt.Sprintf("missing: enum value %s.%s (reached as %s)", e, v, s.via[e]))
			}
		}
	}
	for e, values := range d.enums {
		for v := range values {
			if !s.enums[e][v] {
				out = append(out, "stale: the doc lists enum value "+e+"."+v+", which no request of the CRI carries")
			}
		}
	}
	slices.Sort(out)
	return out
}

func readCRIDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(criFieldsDoc))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCRIFieldsDocAccountsForEveryRequestField: docs/CRI-FIELDS.md has a
// row for every request field and every enum value of the CRI minicri is
// built against, and none for one it no longer has. A cri-api bump that
// adds a field fails here until someone decides what minicri does with it.
func TestCRIFieldsDocAccountsForEveryRequestField(t *testing.T) {
	s := readCRISurface(t)
	d := parseCRIDoc(readCRIDoc(t))
	for _, p := range auditProblems(s, d) {
		t.Error(p)
	}
	counts := map[string]int{}
	for _, status := range d.fields {
		for _, w := range statusWords {
			if strings.HasPrefix(status, w) {
				counts[w]++
				break
			}
		}
	}
	values := 0
	for _, v := range s.enums {
		values += len(v)
	}
	t.Logf("%d messages, %d field rows %v; %d enums, %d values", len(s.seen), len(d.fields), counts, len(s.enums), values)
}

// TestCRIFieldsAuditCatchesMissingAndStaleRows: the audit's check names a
// field, an enum value or a fieldless message the doc lacks, and a row for
// one the CRI does not have.
func TestCRIFieldsAuditCatchesMissingAndStaleRows(t *testing.T) {
	s := readCRISurface(t)
	text := readCRIDoc(t)
	var kept []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "| `Mount.propagation` |") || strings.HasPrefix(line, "| `ListSecurityProfilesRequest` |") {
			continue
		}
		kept = append(kept, strings.Replace(line, "`PROPAGATION_PRIVATE`, ", "", 1))
	}
	kept = append(kept, "", "## Stale", "| Field | Status | Where | Test |", "|---|---|---|---|",
		"| `Mount.gone_field` | honoured | — | — |",
		"", "## Enum values", "| Enum | Values | Status | Where | Test |", "|---|---|---|---|---|",
		"| `GoneEnum` | `A` | honoured | — | — |", "| `Mount` | what | honoured | — | — |")
	got := strings.Join(auditProblems(s, parseCRIDoc(strings.Join(kept, "\n"))), "\n")
	for _, want := range []string{
		"missing: request field Mount.propagation (reached as ",
		"missing: request field ListSecurityProfilesRequest (reached as ListSecurityProfilesRequest)",
		"missing: enum value MountPropagation.PROPAGATION_PRIVATE",
		"stale: the doc has a row for Mount.gone_field,",
		"stale: the doc lists enum value GoneEnum.A,",
		"value \"what\" is not a `VALUE`",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the audit does not say %q; it says:\n%s", want, got)
		}
	}
}
