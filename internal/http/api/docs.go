package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// The reference page at /v1/docs is rendered from the document on the
// server: no CDN, no JavaScript, one inline <style> allowed by its hash, so
// the CSP stays default-src 'none' for everything else.

const docsStyle = `body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:70em;padding:1em 2em;color:#1b1f24}
h2{border-bottom:1px solid #ccd;margin-top:2em}h3{margin:1.6em 0 .3em;font-family:ui-monospace,monospace;font-size:1em}
.m{display:inline-block;min-width:4.5em;font-weight:bold}.get{color:#0a7}.post{color:#15c}.patch{color:#a60}.delete{color:#c22}
table{border-collapse:collapse;margin:.3em 0 1em}td,th{border:1px solid #dde;padding:.2em .6em;text-align:left;vertical-align:top}
th{background:#f4f5f8}code{font-family:ui-monospace,monospace}.req{color:#c22}nav a{display:block}`

var docsCSP = "default-src 'none'; style-src 'sha256-" + func() string {
	sum := sha256.Sum256([]byte(docsStyle))
	return base64.StdEncoding.EncodeToString(sum[:])
}() + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type docOp struct {
	Method, Path, Anchor string
	Op                   *huma.Operation
	Statuses             []string
}

var docsTmpl = template.Must(template.New("docs").Funcs(template.FuncMap{
	"lower":  strings.ToLower,
	"schema": schemaText,
	"ref":    refName,
	"has":    func(list []string, s string) bool { return slices.Contains(list, s) },
}).Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Doc.Info.Title}} reference</title><style>{{.Style}}</style></head><body>
<h1>{{.Doc.Info.Title}} <small>{{.Doc.Info.Version}}</small></h1>
<p>OpenAPI {{.Doc.OpenAPI}} document: <a href="/v1/openapi.json">/v1/openapi.json</a>.
Every error is <code>{"error":{"code","message","correlation_id","details"}}</code>.
Operations marked (bearer) need <code>Authorization: Bearer &lt;BPC_ADMIN_TOKEN&gt;</code>.</p>
<nav>{{range .Ops}}<a href="#{{.Anchor}}"><span class="m {{lower .Method}}">{{.Method}}</span> <code>{{.Path}}</code> {{.Op.Summary}}</a>{{end}}</nav>
<h2>Operations</h2>
{{range .Ops}}<section id="{{.Anchor}}"><h3><span class="m {{lower .Method}}">{{.Method}}</span> {{.Path}} {{if .Op.Security}}<small>(bearer)</small>{{end}}</h3>
<p>{{.Op.Summary}}{{if .Op.Description}} — {{.Op.Description}}{{end}}</p>
{{if .Op.Parameters}}<table><tr><th>parameter</th><th>in</th><th>type</th><th>description</th></tr>
{{range .Op.Parameters}}<tr><td><code>{{.Name}}</code>{{if .Required}} <span class="req">required</span>{{end}}</td><td>{{.In}}</td><td>{{schema .Schema}}</td><td>{{.Description}}</td></tr>{{end}}</table>{{end}}
{{with .Op.RequestBody}}<p>Request body{{if .Required}} (required){{end}}:{{range $ct, $mt := .Content}} <code>{{$ct}}</code> {{schema $mt.Schema}}{{end}}</p>{{end}}
<table><tr><th>status</th><th>description</th><th>body</th></tr>
{{$op := .Op}}{{range .Statuses}}{{$r := index $op.Responses .}}<tr><td>{{.}}</td><td>{{$r.Description}}{{range $h, $_ := $r.Headers}}<br>header <code>{{$h}}</code>{{end}}</td><td>{{range $ct, $mt := $r.Content}}<code>{{$ct}}</code> {{schema $mt.Schema}}<br>{{end}}</td></tr>{{end}}</table></section>
{{end}}
<h2>Schemas</h2>
{{range $name, $s := .Schemas}}<section id="schema-{{$name}}"><h3>{{$name}}</h3>{{if $s.Description}}<p>{{$s.Description}}</p>{{end}}
{{if $s.Properties}}<table><tr><th>field</th><th>type</th><th>description</th></tr>
{{range $p, $ps := $s.Properties}}<tr><td><code>{{$p}}</code>{{if has $s.Required $p}} <span class="req">required</span>{{end}}</td><td>{{schema $ps}}</td><td>{{$ps.Description}}</td></tr>{{end}}
</table>{{else}}<p>{{schema $s}}</p>{{end}}</section>{{end}}
</body></html>`))

func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

// schemaText renders a schema in one line of HTML: links for $refs,
// type[format], nullable, enum, bounds, items and map values.
func schemaText(s *huma.Schema) template.HTML {
	if s == nil {
		return ""
	}
	if s.Ref != "" {
		n := template.HTMLEscapeString(refName(s.Ref))
		return template.HTML(`<a href="#schema-` + n + `">` + n + `</a>`)
	}
	var b strings.Builder
	switch {
	case len(s.OneOf) > 0:
		b.WriteString("one of " + alternatives(s.OneOf))
	case len(s.AnyOf) > 0:
		b.WriteString("any of " + alternatives(s.AnyOf))
	case s.Type == "":
		b.WriteString("any JSON")
	case s.Type == huma.TypeArray:
		b.WriteString("array of " + string(schemaText(s.Items)))
	case s.Type == huma.TypeObject && s.Properties == nil:
		b.WriteString("object")
		if as, ok := s.AdditionalProperties.(*huma.Schema); ok {
			b.WriteString(" of " + string(schemaText(as)))
		}
	default:
		b.WriteString(template.HTMLEscapeString(s.Type))
	}
	if s.Format != "" {
		b.WriteString(" (" + template.HTMLEscapeString(s.Format) + ")")
	}
	if s.Nullable {
		b.WriteString(" or null")
	}
	if len(s.Enum) > 0 {
		var vs []string
		for _, v := range s.Enum {
			vs = append(vs, template.HTMLEscapeString(strings.Trim(strings.TrimSpace(toJSON(v)), `"`)))
		}
		b.WriteString(": " + strings.Join(vs, " | "))
	}
	if s.Minimum != nil || s.Maximum != nil {
		b.WriteString(" [" + num(s.Minimum) + " … " + num(s.Maximum) + "]")
	}
	if s.MaxLength != nil {
		b.WriteString(" ≤ " + num2(*s.MaxLength) + " chars")
	}
	return template.HTML(b.String())
}

// alternatives renders the schemas of a oneOf or anyOf, " | " between them.
func alternatives(alts []*huma.Schema) string {
	texts := make([]string, len(alts))
	for i, alt := range alts {
		texts[i] = string(schemaText(alt))
	}
	return strings.Join(texts, " | ")
}

// renderDocs renders the reference page of doc.
func renderDocs(doc *huma.OpenAPI) []byte {
	var ops []docOp
	for path, item := range doc.Paths {
		for _, m := range []struct {
			name string
			op   *huma.Operation
		}{{"GET", item.Get}, {"POST", item.Post}, {"PUT", item.Put}, {"PATCH", item.Patch}, {"DELETE", item.Delete}} {
			if m.op == nil {
				continue
			}
			var statuses []string
			for st := range m.op.Responses {
				statuses = append(statuses, st)
			}
			sort.Strings(statuses) // "default" sorts after the digits
			ops = append(ops, docOp{Method: m.name, Path: path, Anchor: m.op.OperationID, Op: m.op, Statuses: statuses})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	var buf bytes.Buffer
	if err := docsTmpl.Execute(&buf, map[string]any{
		"Doc": doc, "Ops": ops, "Schemas": doc.Components.Schemas.Map(), "Style": template.CSS(docsStyle),
	}); err != nil {
		panic(fmt.Sprintf("error rendering the API reference page: %v", err))
	}
	return buf.Bytes()
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func num(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

func num2(n int) string { return strconv.Itoa(n) }
