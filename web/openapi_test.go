package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rostrumhq/rostrum/docs"
	"github.com/rostrumhq/rostrum/internal/problem"
)

// loadOpenAPI loads and validates docs/openapi.yaml.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	return doc
}

// TestOpenAPIResponses validates real answers of the read API (rooms from
// the page's source, boards from a real Store on redis-server), its errors
// included, against docs/openapi.yaml, and checks that the server serves
// the document and that every route it answers is in it.
func TestOpenAPIResponses(t *testing.T) {
	doc := loadOpenAPI(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := boardServer(t)
	for _, p := range []string{
		"/v1/rooms", "/v1/rooms?limit=2", "/v1/rooms?limit=2&offset=4", "/v1/rooms?q=tutor", "/v1/rooms?limit=0",
		"/v1/rooms/r-1001/top", "/v1/rooms/nobody/top", "/v1/rooms/a%7Bb%7D/top", "/v1/rooms/broken/top",
		"/v1/boards", "/v1/boards/weekly-score/top", "/v1/boards/weekly-score/top?n=0",
		"/v1/boards/item-trades/top?window=3m", "/v1/boards/nope/top",
		"/v1/boards/weekly-score/members/u-1", "/v1/boards/weekly-score/members/nobody",
		"/v1/boards/weekly-score/members/u-2/around?n=1", "/v1/boards/weekly-score/settled",
		"/v1/members/u-1", "/v1/members/u-1?boards=weekly-score,item-trades", "/v1/members/u-1?boards=nope",
		"/v1/members/u-1/hints", "/v1/members/a%7Bb%7D",
		"/v1/boards/weekly-score/members?ids=u-2,nobody,u-3", "/v1/boards/item-trades/members?ids=item-1&window=1h",
		"/v1/boards/weekly-score/members?ids=",
		"/v1/openapi.yaml",
	} {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+p, nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("%s: not in docs/openapi.yaml: %v", p, err)
			continue
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: credentialPresent}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && res.StatusCode < 400 {
			t.Errorf("%s: the request does not match the document, yet was answered %d: %v", p, res.StatusCode, err)
		}
		if p == "/v1/openapi.yaml" {
			if !bytes.Equal(body, docs.OpenAPI) {
				t.Errorf("/v1/openapi.yaml is not docs/openapi.yaml")
			}
			continue
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: res.StatusCode,
			Header: res.Header, Body: io.NopCloser(bytes.NewReader(body)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("%s: %d %s\ndoes not match docs/openapi.yaml: %v", p, res.StatusCode, body, err)
		}
	}
}

// credentialPresent is the AuthenticationFunc of TestOpenAPIResponses: a
// security scheme is met when its credential is in the request (the value
// is the server's to check). The test server has no read tokens and the
// requests carry none, so a read passes only by an empty requirement ({}):
// a read the document says needs a credential fails.
func credentialPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s, r := in.SecurityScheme, in.RequestValidationInput.Request
	switch {
	case s.Type == "http" && s.Scheme == "bearer":
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			return nil
		}
	case s.Type == "apiKey" && s.In == "query":
		if r.URL.Query().Get(s.Name) != "" {
			return nil
		}
	case s.Type == "apiKey" && s.In == "header":
		if r.Header.Get(s.Name) != "" {
			return nil
		}
	}
	return fmt.Errorf("no %s credential", in.SecuritySchemeName)
}

// TestOpenAPIOperations checks what the linter cannot: every operation
// declares its security (security: [] where it is open), a summary and an
// operationId; one that takes a credential declares 401, one with a body
// 415; every error answer is a problem whose status and code agree with
// internal/problem (the control 409 and the /readyz 503 excepted), and the
// Problem schema's code enum is exactly the codes internal/problem defines.
func TestOpenAPIOperations(t *testing.T) {
	doc := loadOpenAPI(t)
	src, err := os.ReadFile("../internal/problem/problem.go")
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, m := range regexp.MustCompile(`= "([a-z-]+)" +// \d{3}`).FindAllStringSubmatch(string(src), -1) {
		codes = append(codes, m[1])
	}
	var enum []string
	for _, v := range doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum {
		enum = append(enum, fmt.Sprint(v))
	}
	slices.Sort(codes)
	slices.Sort(enum)
	if len(codes) == 0 || !slices.Equal(codes, enum) {
		t.Errorf("Problem.code enum %v, internal/problem defines %v", enum, codes)
	}
	for p, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + p
			if op.Summary == "" || op.OperationID == "" {
				t.Errorf("%s: no summary or operationId", name)
			}
			if op.Security == nil {
				t.Errorf("%s: no security (security: [] where the route is open)", name)
				continue
			}
			credential := false
			for _, req := range *op.Security {
				credential = credential || len(req) > 0
			}
			if credential && op.Responses.Value("401") == nil {
				t.Errorf("%s takes a credential but declares no 401", name)
			}
			if op.RequestBody != nil && op.Responses.Value("415") == nil {
				t.Errorf("%s takes a body but declares no 415", name)
			}
			for status, ref := range op.Responses.Map() {
				n, err := strconv.Atoi(status)
				if err != nil || n < 400 || status == "409" || p == "/readyz" {
					continue
				}
				mt := ref.Value.Content.Get(problem.ContentType)
				if mt == nil || len(ref.Value.Content) != 1 {
					t.Errorf("%s %s: not only %s", name, status, problem.ContentType)
					continue
				}
				got := map[string][]any{}
				for _, s := range append(openapi3.SchemaRefs{mt.Schema}, mt.Schema.Value.AllOf...) {
					for _, k := range []string{"status", "code"} {
						if prop := s.Value.Properties[k]; prop != nil && len(prop.Value.Enum) > 0 {
							got[k] = prop.Value.Enum
						}
					}
				}
				if !slices.Contains(got["code"], any(problem.CodeFor(n))) || !slices.Equal(got["status"], []any{float64(n)}) {
					t.Errorf("%s %s: status %v and code %v, want %d and %s among them", name, status, got["status"], got["code"], n, problem.CodeFor(n))
				}
				for _, c := range got["code"] {
					if !slices.Contains(enum, fmt.Sprint(c)) {
						t.Errorf("%s %s: code %v is not in the Problem schema", name, status, c)
					}
				}
			}
		}
	}
}

// TestOpenAPIEveryRoute: every route the packages register is in the
// document (read from the sources, so a new route without its entry fails).
func TestOpenAPIEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	route := regexp.MustCompile(`"(?:GET|POST|PUT) (/[^" ]*)"|"(/v1/[^" ]*)"`)
	for _, file := range []string{"server.go", "boards.go", "members.go", "../control/http.go", "../gateway/server.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range route.FindAllStringSubmatch(string(src), -1) {
			p := strings.TrimSuffix(m[1]+m[2], "{$}")
			if p == "/" || strings.HasPrefix(p, "/static") {
				continue
			}
			found := doc.Paths.Find(strings.TrimSuffix(p, "/")) != nil
			if strings.HasSuffix(p, "/") { // a prefix: some documented route lies under it
				for _, k := range doc.Paths.InMatchingOrder() {
					found = found || strings.HasPrefix(k, p)
				}
			}
			if !found {
				t.Errorf("%s registers %s, which docs/openapi.yaml lacks", file, p)
			}
		}
	}
}

// compileSchemas compiles docs/schemas/*.schema.json.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	names, _ := fs.Glob(docs.Schemas, "schemas/*.schema.json")
	for _, n := range names {
		b, _ := fs.ReadFile(docs.Schemas, n)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if err := c.AddResource(path.Base(n), v); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, n := range names {
		s, err := c.Compile(path.Base(n))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[strings.TrimSuffix(path.Base(n), ".schema.json")] = s
	}
	return out
}

func validateJSON(t *testing.T, s *jsonschema.Schema, what string, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return s.Validate(v)
}

// TestSchemas validates against docs/schemas: the sample callbacks of
// testdata/callbacks/valid, the records a processor published
// (testdata/outputs), and the JSON examples of callback events and
// output records of the README and docs/*.md.
func TestSchemas(t *testing.T) {
	schemas := compileSchemas(t)
	event, output := schemas["callback-event"], schemas["output-record"]
	files, _ := fs.Glob(os.DirFS("../testdata/callbacks/valid"), "*.json")
	if len(files) == 0 {
		t.Fatal("no samples in testdata/callbacks/valid")
	}
	for _, f := range files {
		b, _ := os.ReadFile("../testdata/callbacks/valid/" + f)
		if err := validateJSON(t, event, f, b); err != nil {
			t.Errorf("testdata/callbacks/valid/%s: %v", f, err)
		}
	}
	outs, _ := os.ReadFile("../testdata/outputs/two-rooms.jsonl")
	for i, line := range bytes.Split(bytes.TrimSpace(outs), []byte("\n")) {
		if err := validateJSON(t, output, "two-rooms.jsonl", line); err != nil {
			t.Errorf("testdata/outputs/two-rooms.jsonl:%d: %v", i+1, err)
		}
	}
	// The examples of the README and the guides.
	pages, _ := filepath.Glob("../docs/*.md")
	var readme []byte
	for _, p := range append([]string{"../README.md"}, pages...) {
		b, _ := os.ReadFile(p)
		readme = append(readme, b...)
	}
	block := regexp.MustCompile("(?s)```json\n(.*?)```")
	var events, records int
	for _, m := range block.FindAllSubmatch(readme, -1) {
		var v map[string]any
		if json.Unmarshal(m[1], &v) != nil {
			continue // an example with elisions (…)
		}
		switch {
		case v["top"] != nil && v["seq"] != nil && v["room_id"] != nil:
			records++
			if err := validateJSON(t, output, "docs", m[1]); err != nil {
				t.Errorf("docs output record %s: %v", m[1], err)
			}
		case v["type"] != nil && v["ts"] != nil:
			events++
			if err := validateJSON(t, event, "docs", m[1]); err != nil {
				t.Errorf("docs callback event %s: %v", m[1], err)
			}
		}
	}
	if events < 2 || records < 1 {
		t.Fatalf("README and docs/*.md: %d callback events and %d output records found, want at least 2 and 1", events, records)
	}
	// The schema refuses what the decoder refuses for routing and shape.
	for _, bad := range []string{`{"room_id":"a b","user_id":"u","type":"join","ts":1}`, `[]`,
		`{"room_id":"r","user_id":"u","type":"volume","value":1000,"ts":1}`} {
		if validateJSON(t, event, bad, []byte(bad)) == nil {
			t.Errorf("callback schema accepts %s", bad)
		}
	}
}
