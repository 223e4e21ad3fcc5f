//go:build !linux

package runtime

import "context"

func (NamespaceDriver) open(context.Context, *Sandbox) (host, error) { return nil, errUnsupported }
