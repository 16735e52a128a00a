package processor

import "testing"

// TestReplayTakesTheConfiguredStableStep: `rostrum wal replay` merges the
// stable lists as the processor would, with the hysteresis unless
// --stability says otherwise.
func TestReplayTakesTheConfiguredStableStep(t *testing.T) {
	for stab, hyst := range map[string]bool{StabilityHysteresis: true, StabilityMerge: false} {
		cfg := Config{Brokers: []string{"unused"}, Env: "test", Stable: StableConfig{Strategy: stab}}
		cfg.withDefaults()
		if got := replayer(cfg, nil, nil).strategy.hyst != nil; got != hyst {
			t.Errorf("--stability %s: the replay's hysteresis %v, want %v", stab, got, hyst)
		}
	}
}
