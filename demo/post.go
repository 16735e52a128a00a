package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// poster sends callbacks to a rostrum gateway as a producer of callbacks
// does: one POST per record, over keep-alive connections.
type poster struct {
	url   string // the gateway's base URL, without the path
	token string // bearer token; "" for none
	hc    *http.Client

	accepted, refused atomic.Int64
}

func newPoster(base, token string) *poster {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &poster{url: strings.TrimRight(base, "/"), token: token, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// post sends body to /v1/callbacks/{source}. A 4xx answer (the simulated
// meeting sends a few bad records on purpose) is counted, not an error; a
// failed connection is an error.
func (p *poster) post(ctx context.Context, source string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/v1/callbacks/"+source, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("demo: post to the gateway: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		p.accepted.Add(1)
	} else {
		p.refused.Add(1)
	}
	return nil
}
