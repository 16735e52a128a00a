// Package docs holds rostrum's written contracts as files: the OpenAPI
// document of every HTTP route (openapi.yaml, served at /v1/openapi.yaml)
// and the JSON Schemas of the records on the topics (schemas/). They are
// embedded so the server serves, and the tests validate against, the very
// files a reader opens.
package docs

import "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

// Schemas holds schemas/*.schema.json.
//
//go:embed schemas/*.schema.json
var Schemas embed.FS
