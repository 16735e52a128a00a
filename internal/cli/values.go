package cli

import (
	"fmt"
	"strings"
	"time"
)

// SplitList splits a comma-separated flag value (--brokers, --modes,
// --rates) into its items, trimmed, without empty ones.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// AckDelay turns the --ack-delay flag into processor.Config.AckDelay, where
// 0 means the default and a negative delay none.
func AckDelay(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// YAMLFlagText renders a value of the --config file (YAML) as the text of
// its flag; a list becomes a comma-separated list.
func YAMLFlagText(v any) string {
	if l, ok := v.([]any); ok {
		parts := make([]string, len(l))
		for i, x := range l {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}
