package config

import (
	"errors"
	"fmt"
	"testing"
)

func TestRename(t *testing.T) {
	err := fmt.Errorf("start: %w", Errorf("processor.Config", "TopN", "must be between 1 and %d, got %d", 100, 0))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "TopN" {
		t.Fatalf("errors.As: %v", err)
	}
	if got := err.Error(); got != "start: processor.Config.TopN must be between 1 and 100, got 0" {
		t.Errorf("Error() = %q", got)
	}
	if got := Rename(err, map[string]string{"TopN": "--top-n"}).Error(); got != "--top-n must be between 1 and 100, got 0" {
		t.Errorf("renamed: %q", got)
	}
	if got := Rename(err, map[string]string{"Env": "--env"}); got != err {
		t.Errorf("an unmapped field was renamed: %v", got)
	}
	plain := errors.New("other")
	if Rename(plain, map[string]string{"TopN": "--top-n"}) != plain {
		t.Error("a plain error was changed")
	}
}
