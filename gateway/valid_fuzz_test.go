package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are bodies at the edges of JSON's grammar, and of
// encoding/json's reading of it.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` {} `, "\t[\r\n]\n", `{`, `}`, `[`, `]`, `[}`, `{]`, `{}}`, `[]]`, `{}{}`, `[] []`,
	`{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{,}`, `[,]`, `[1,]`, `[,1]`, `[1 2]`,
	`{"room_id":"r-1","v":[1,2.5,-3e+2,{"x":null}],"t":true,"f":false}`,
	`0`, `-0`, `01`, `-`, `-a`, `1.`, `.5`, `1.5`, `1e`, `1e+`, `1E-7`, `1.5e3`, `+1`, `0x1`, `1_0`, `00`, `-01`, `2.`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `NULL`, `True`,
	`""`, `"`, `"a`, `"\"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u12"`, `"\u"`, `"\x"`, `"\'"`,
	"\"a\x00b\"", "\"a\x1fb\"", "\"a\x7fb\"", "\"\xff\xfe\"", "\"é\"", "\xef\xbb\xbf{}", "{}\x00", "\x00",
	`["a",{"b":["c",{"d":[]}]}]`, `{"a":{"b":{"c":{}}}}`, `[[[[[]]]]]`, `[[[[[]]]]`, `{"a":[}`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
	strings.Repeat("[", maxDepth+1),
	strings.Repeat(`[{"a":`, 40) + "1" + strings.Repeat("}]", 40),                                  // objects and arrays past depth 64
	strings.Repeat(`[{"a":`, 40) + "1" + strings.Repeat("}]", 5) + "]}" + strings.Repeat("}]", 34), // and a closing that does not match, there
	strings.Repeat(`[{"a":`, 40) + "1" + strings.Repeat("}]", 10) + `,{"b":[[]]}` + strings.Repeat("}]", 30),
}

// FuzzValid holds valid to json.Valid's verdict on any input. Seeds:
// validCases.
func FuzzValid(f *testing.F) {
	for _, s := range validCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Fatalf("valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
