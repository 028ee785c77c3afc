package bucket

import (
	"net/http"
	"net/http/httptest"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// FakeS3 is an S3-compatible server in the process (gofakes3, in memory,
// on 127.0.0.1), for tests and the demo: the operator reaches it with the same
// S3 client and code path as AWS S3 or MinIO.
type FakeS3 struct {
	// S3 says how to reach the server.
	S3 S3Config

	server *httptest.Server
}

// NewFakeS3 starts an in-memory S3 server on 127.0.0.1. Each middleware
// wraps its handler, outermost first: tests inject faults with them. Close it
// when done.
func NewFakeS3(middleware ...func(http.Handler) http.Handler) *FakeS3 {
	h := gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	for i := len(middleware) - 1; i >= 0; i-- {
		h = middleware[i](h)
	}
	srv := httptest.NewServer(h)
	return &FakeS3{
		S3: S3Config{
			Endpoint:        srv.Listener.Addr().String(),
			AccessKeyID:     "steady-demo",
			SecretAccessKey: "steady-demo-secret",
			Region:          "us-east-1",
		},
		server: srv,
	}
}

// Close stops the server; its buckets are gone with it.
func (f *FakeS3) Close() { f.server.Close() }
