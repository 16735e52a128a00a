package stability_test

import (
	"fmt"
	"time"

	"github.com/rostrumhq/rostrum/stability"
)

func ExampleMerge() {
	prev := []string{"ann", "bob", "cai", "dev"} // what the layout shows now
	next := []string{"eve", "dev", "fay", "ann"} // the new raw top-4
	fmt.Println(stability.Merge(nil, prev, next, 4))
	// Output: [ann eve fay dev]
}

func ExampleHysteresis() {
	h := stability.Hysteresis{N: 3, Dwell: time.Second, Grace: 3 * time.Second, Margin: 100}
	var st stability.State
	shown := []string{"ann", "bob", "cai"}
	standing := []stability.Standing{{Score: 500, Ranked: true}, {Score: 400, Ranked: true}, {Score: 40, Ranked: true}}
	// dev edges past cai by a little: it has to hold its place for the dwell.
	raw := []stability.Member{{ID: "ann", Score: 500}, {ID: "bob", Score: 400}, {ID: "dev", Score: 60}}
	fmt.Println(h.Step(nil, &st, shown, standing, raw, 10_000), st.String(), h.Next(&st))
	fmt.Println(h.Step(nil, &st, shown, standing, raw, 11_000), st.String())
	// Output:
	// [ann bob cai] 1|dev=10000|cai=10000 11000
	// [ann bob dev]
}
