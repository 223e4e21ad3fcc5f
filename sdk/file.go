package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Name string `json:"name"`
	// Type is "file", "dir" or "symlink".
	Type string `json:"type"`
	Size int64  `json:"size"`
	// Mode is the permission bits as the server reports them.
	Mode       FileMode  `json:"mode"`
	ModifiedAt time.Time `json:"modified_at"`
}

// FileMode is a file mode. It decodes from a JSON number or from an octal string
// such as "0644", and encodes as a number.
type FileMode fs.FileMode

// UnmarshalJSON accepts a number or an octal string.
func (m *FileMode) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		n, err := strconv.ParseUint(s, 8, 32)
		if err != nil {
			return fmt.Errorf("sdk: bad file mode %q", s)
		}
		*m = FileMode(n)
		return nil
	}
	var n uint32
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("sdk: bad file mode %s", b)
	}
	*m = FileMode(n)
	return nil
}

// WriteFileOptions tunes [Client.WriteFile].
type WriteFileOptions struct {
	// Mode is the new file's permission bits (sent as ?mode=0644); 0 leaves the
	// server's default.
	Mode fs.FileMode
}

// DeleteFileOptions tunes [Client.DeleteFile].
type DeleteFileOptions struct {
	// Recursive deletes a directory with its contents.
	Recursive bool
}

// OpenFile streams the file at path (relative to the workspace, or absolute inside
// it). The caller closes the reader. A directory yields its JSON listing; use
// [Client.ListDir] for that.
func (c *Client) OpenFile(ctx context.Context, sb, path string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: sbPath(sb, "files"), query: url.Values{"path": {path}}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// PathContent is what [Client.GetPath] found at a path: a file's bytes or a
// directory's listing.
type PathContent struct {
	// Dir is true for a directory: Entries is its listing and Body is nil.
	Dir     bool
	Entries []DirEntry
	// Body streams a file's bytes; the caller closes it. Nil for a directory.
	Body io.ReadCloser
}

// GetPath reads what is at path with one request: a file's bytes as a stream, or a
// directory's listing. The server answers a directory with JSON and a file with
// application/octet-stream; GetPath tells them apart by that Content-Type, so a file
// whose bytes happen to be JSON is still a file.
func (c *Client) GetPath(ctx context.Context, sb, path string) (*PathContent, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: sbPath(sb, "files"), query: url.Values{"path": {path}}})
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return &PathContent{Body: resp.Body}, nil
	}
	defer resp.Body.Close()
	var out struct {
		Entries []DirEntry `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("sdk: failed to decode the listing of %q: %w", path, err)
	}
	return &PathContent{Dir: true, Entries: out.Entries}, nil
}

// ReadFile returns the bytes of the file at path.
func (c *Client) ReadFile(ctx context.Context, sb, path string) ([]byte, error) {
	r, err := c.OpenFile(ctx, sb, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("sdk: failed to read file %q: %w", path, err)
	}
	return b, nil
}

// ListDir returns the entries of the directory at path.
func (c *Client) ListDir(ctx context.Context, sb, path string) ([]DirEntry, error) {
	var out struct {
		Entries []DirEntry `json:"entries"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: sbPath(sb, "files"), query: url.Values{"path": {path}}}, &out)
	return out.Entries, err
}

// WriteFile writes data to the file at path, making parent directories. opts may be
// nil.
func (c *Client) WriteFile(ctx context.Context, sb, path string, data io.Reader, opts *WriteFileOptions) error {
	q := url.Values{"path": {path}}
	if opts != nil && opts.Mode != 0 {
		q.Set("mode", fmt.Sprintf("%04o", uint32(opts.Mode.Perm())))
	}
	_, err := c.do(ctx, request{method: http.MethodPut, path: sbPath(sb, "files"), query: q, raw: data}, nil)
	return err
}

// DeleteFile deletes the file or directory at path. opts may be nil.
func (c *Client) DeleteFile(ctx context.Context, sb, path string, opts *DeleteFileOptions) error {
	q := url.Values{"path": {path}}
	if opts != nil && opts.Recursive {
		q.Set("recursive", "true")
	}
	_, err := c.do(ctx, request{method: http.MethodDelete, path: sbPath(sb, "files"), query: q}, nil)
	return err
}

// MkdirRequest is the body of POST …/files/mkdir.
type MkdirRequest struct {
	Path    string `json:"path"`
	Parents bool   `json:"parents,omitempty"`
}

// Mkdir makes a directory, and its parents when req.Parents is set.
func (c *Client) Mkdir(ctx context.Context, sb string, req MkdirRequest) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: sbPath(sb, "files", "mkdir"), body: req}, nil)
	return err
}
