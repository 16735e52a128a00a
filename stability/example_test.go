package stability_test

import (
	"fmt"

	"github.com/rostrumhq/rostrum/stability"
)

func ExampleMerge() {
	prev := []string{"ann", "bob", "cai", "dev"} // what the layout shows now
	next := []string{"eve", "dev", "fay", "ann"} // the new raw top-4
	fmt.Println(stability.Merge(nil, prev, next, 4))
	// Output: [ann eve fay dev]
}
