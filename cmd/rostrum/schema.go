package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/hints"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/route"
)

// The JSON Schema of the --config file, docs/config.schema.json
// (`rostrum help config --schema`, `make docs`; TestConfigSchemaCurrent
// fails when the two differ). It is walked from the same flag sets as the
// reference, so a new flag is a new key; the structured keys (routes,
// boards, hints) are walked from the Go types the file decodes into.
// Editors with the YAML language server complete and check a file that
// starts with `# yaml-language-server: $schema=…/config.schema.json`.

// schemaID is where the schema is published.
const schemaID = "https://raw.githubusercontent.com/rostrumhq/rostrum/main/docs/config.schema.json"

// schema is one JSON Schema node; encoding/json sorts its keys, so the
// output is stable.
type schema map[string]any

// interpolated is a value written as ${VAR} (interpolate.go): any key may
// take one, whatever its type.
var interpolated = schema{"type": "string", "pattern": `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`}

// durationSchema is a Go duration ("1m30s", "250ms") or 0.
var durationSchema = schema{"anyOf": []any{
	schema{"type": "string", "pattern": `^-?(0|([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+)$`},
	schema{"const": 0},
}}

// configSchema is the schema of the config file: every key that a command
// reading the file takes (configCommands with fromAll), each with its
// type, default, variable and the commands that read it.
func configSchema() []byte {
	props := map[string]schema{}
	readers := map[string][]string{}
	for _, c := range configCommands {
		if c.sources != fromAll {
			continue
		}
		fs := cli.NewFlagSet(c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.register(fs)
		ref := commandFlags(c)
		fs.VisitAll(func(f *flag.Flag) {
			cf := ref[f.Name]
			if cf.key == "" {
				return // not read from the file by this command
			}
			name := c.name
			readers[cf.key] = append(readers[cf.key], name)
			if _, ok := props[cf.key]; ok {
				return // the first command's default (run's) stands
			}
			props[cf.key] = flagSchema(f, cf)
		})
	}
	for k, s := range props {
		s["description"] = fmt.Sprintf("%s\n\n%s; read by rostrum %s.", s["description"], fmt.Sprint(s["x-env"]), strings.Join(readers[k], ", "))
		delete(s, "x-env")
	}
	for old, name := range cli.DeprecatedFlags() {
		if s, ok := props[name]; ok {
			d := schema{}
			for k, v := range s {
				d[k] = v
			}
			d["description"] = "Deprecated: write " + name + " (the old name goes in " + cli.DeprecatedRemoval + ")."
			d["deprecated"] = true
			props[old] = d
		}
	}

	routes := typeSchema(reflect.TypeFor[route.Rule]())
	routes["required"] = []string{"env", "pattern"}
	props[routesKey] = schema{"type": "array", "items": routes,
		"description": "Which rooms belong to which environment, first match wins: the YAML form of --route (docs/gateway.md)."}

	boardItem := typeSchema(reflect.TypeFor[boarddef.Config]())
	boardItem["required"] = []string{"name", "events", "member", "kind"}
	props[boardsKey] = schema{"type": "array", "items": boardItem,
		"description": "The leaderboards (docs/leaderboards.md#configuration); read by rostrum run, check, demo, wal replay, boards prune."}

	hintItem := typeSchema(reflect.TypeFor[hints.Rule]())
	hintItem["required"] = []string{"name", "when", "text"}
	props[hintsKey] = schema{"type": "array", "items": hintItem,
		"description": "Hint rules over a member's board numbers (docs/leaderboards.md#hints); read by rostrum run, check, demo."}

	root := schema{
		"$schema":              "http://json-schema.org/draft-07/schema#",
		"$id":                  schemaID,
		"title":                "rostrum --config file",
		"description":          "The YAML file given by --config (or ROSTRUM_CONFIG): keys are the flag names (docs/configuration.md). Values may name environment variables: ${VAR}, ${VAR:-default}.",
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		panic(err) // maps of strings, numbers and bools only
	}
	return append(b, '\n')
}

// flagSchema is the schema of flag f's key: its type from its flag.Value,
// its default, its usage text; x-env carries its variable to the caller.
func flagSchema(f *flag.Flag, cf configFlag) schema {
	list := strings.Contains(f.Usage, "comma-separated")
	var s schema
	var def any = cf.def
	takesString := false // a string takes ${VAR} as it is
	switch strings.TrimPrefix(fmt.Sprintf("%T", f.Value), "*flag.") {
	case "boolValue":
		s = schema{"type": "boolean"}
		def, _ = strconv.ParseBool(cf.def)
	case "intValue", "int64Value":
		s = schema{"type": "integer"}
		def, _ = strconv.ParseInt(cf.def, 10, 64)
	case "uintValue", "uint64Value":
		s = schema{"type": "integer", "minimum": 0}
		def, _ = strconv.ParseUint(cf.def, 10, 64)
	case "float64Value":
		s = schema{"type": "number"}
		def, _ = strconv.ParseFloat(cf.def, 64)
	case "durationValue":
		s = durationSchema
	default:
		s = schema{"type": "string"}
		takesString = true
		if list {
			s = schema{"anyOf": []any{s, schema{"type": "array", "items": schema{"type": "string"}}}}
		}
	}
	out := schema{"description": f.Usage, "x-env": "variable " + cf.env}
	if takesString {
		for k, v := range s {
			out[k] = v
		}
	} else {
		out["anyOf"] = []any{s, interpolated}
	}
	if _, secret := f.Value.(*cli.Secret); !secret && cf.def != "" {
		out["default"] = def
	}
	return out
}

// typeSchema is the schema of a struct the file decodes into: its yaml
// keys with their types; an unknown key is an error, as it is to rostrum.
func typeSchema(t reflect.Type) schema {
	props := map[string]schema{}
	for i := range t.NumField() {
		sf := t.Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if key == "" || key == "-" || !sf.IsExported() {
			continue
		}
		props[key] = fieldSchema(sf.Type)
	}
	return schema{"type": "object", "properties": props, "additionalProperties": false}
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	timeType     = reflect.TypeFor[time.Time]()
	windowType   = reflect.TypeFor[boarddef.Window]()
)

// fieldSchema is the schema of a field of type t; a type that decodes
// itself (an UnmarshalYAML method) takes any value, but boarddef.Window.
func fieldSchema(t reflect.Type) schema {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == windowType {
		// boarddef.Window: "10m" or {length: 24h, slice: 1h}
		w := typeSchema(t)
		w["required"] = []string{"length"}
		return schema{"anyOf": []any{durationSchema, w}}
	}
	if _, ok := reflect.PointerTo(t).MethodByName("UnmarshalYAML"); ok {
		return schema{}
	}
	var s schema
	switch {
	case t == durationType:
		s = durationSchema
	case t == timeType:
		return schema{"type": "string", "format": "date-time"}
	case t.Kind() == reflect.String:
		return schema{"type": "string"}
	case t.Kind() == reflect.Bool:
		s = schema{"type": "boolean"}
	case slices.Contains([]reflect.Kind{reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64}, t.Kind()):
		s = schema{"type": "integer"}
	case t.Kind() == reflect.Float64:
		s = schema{"type": "number"}
	case t.Kind() == reflect.Slice:
		return schema{"type": "array", "items": fieldSchema(t.Elem())}
	case t.Kind() == reflect.Struct:
		return typeSchema(t)
	default:
		return schema{}
	}
	return schema{"anyOf": []any{s, interpolated}}
}
