package main

import (
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/web"
)

// The Redis sink is the processor's store and the page's source. The
// interfaces live where they are used (processor, web) and the sink
// imports neither, so the binary, which wires them, checks the fit.
var (
	_ processor.Store = (*sink.Store)(nil)
	_ web.Source      = (*sink.Store)(nil)
)
