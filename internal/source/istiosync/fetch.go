package istiosync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// MaxBody bounds the size of a sync status body Fetch reads: istiod lists every proxy of the
// mesh, a few hundred bytes each.
const MaxBody = 16 << 20

// Fetch GETs the sync status at rawURL (DefaultURL in a default installation) with client
// (http.DefaultClient when nil) and parses it. A status other than 2xx is an error naming it,
// as is a body over MaxBody bytes. The caller bounds the time it takes with ctx or the
// client's timeout.
func Fetch(ctx context.Context, client *http.Client, rawURL string) (map[string]Proxy, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("istiod sync status: %w", err)
	}
	where := req.URL.Redacted() // errors never show a password of the URL
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, fmt.Errorf("GET %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("GET %s: status %s", where, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", where, err)
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("GET %s: the body is larger than %d bytes", where, MaxBody)
	}
	status, err := Parse(body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", where, err)
	}
	return status, nil
}
