// Command rostrum-dev is the developer's companion to rostrum: the tools
// that measure it and feed it, which a production deployment does not
// need.
//
//	rostrum-dev bench                     end to end: rostrum vs the naive design vs raw Redis
//	rostrum-dev bench --workload gateway  the callback gateway over HTTP vs a raw producer
//	rostrum-dev bench --flicker           the shown top-N's flicker (also: rostrum-dev flicker)
//	rostrum-dev simulate                  simulated meetings into a Kafka cluster or a gateway
//
// Operators do not deploy it: releases and the container image ship
// rostrum alone (`make release`, deployments/Dockerfile), and `make build`
// builds both into bin/. It is a binary of its own so that the production
// binary links neither the benchmarks nor their charts (gonum/plot):
// cmd/rostrum's TestBinaryLinksNoDevTools holds rostrum to that.
//
// Like cmd/rostrum it wires and decides nothing: the work is in packages
// bench, bench/flicker and demo, the meetings in internal/meeting, and the
// connection flags (credentials, TLS, SASL, Sentinel), which must be those
// of `rostrum run` so that a benchmark against a secured cluster connects
// as the processors do, in internal/cli. Dependencies point one way: this
// command imports those packages, and nothing imports it.
package main
