package main

import (
	"context"
	"errors"
	"io"
)

func cmdDLQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("dlq: not yet")
}
