package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sandgate/sandgate/actor"
)

// Budgets are the operator's default and maximum sandbox budgets, as a --budget file
// gives them. A zero field is unset (see actor.OperatorBudgets for how it is filled).
type Budgets struct {
	Default actor.Budget
	Max     actor.Budget
}

// budgetFileFields are the fields a budget object in a --budget file may have: the
// budget object of the API, by its JSON names.
var budgetFileFields = []string{
	"idle_ttl_ms", "max_duration_ms", "max_processes", "max_exec_timeout_ms", "output_buffer_bytes",
	"memory_bytes", "pids", "cpu_millis", "disk_bytes", "network",
}

// LoadBudgets reads and parses a --budget file (see ParseBudgets).
func LoadBudgets(path string) (Budgets, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Budgets{}, fmt.Errorf("failed to read budget file: %w", err)
	}
	bs, err := ParseBudgets(b)
	if err != nil {
		return Budgets{}, fmt.Errorf("failed to load budget file %s: %w", path, err)
	}
	return bs, nil
}

// ParseBudgets parses the contents of a --budget file: the operator's defaults and
// maxima, as budget objects with the API's field names, either one optional:
//
//	{"default": {"memory_bytes": 268435456, "network": "none"},
//	 "max": {"memory_bytes": 2147483648, "cpu_millis": 2000, "network": "host"}}
//
// It is strict, so a typo cannot quietly leave a limit at its default: an unknown or
// miscased field (named in the error), a field given twice, a number that is not a
// positive integer, a network other than "none", "loopback" or "host", a default above
// its maximum, and trailing data are all errors. Fields left out take the built-in
// defaults (actor.OperatorBudgets).
func ParseBudgets(data []byte) (Budgets, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out Budgets
	seen := map[string]bool{}
	err := eachField(dec, "the budget file", func(key string) error {
		if seen[key] {
			return fmt.Errorf("field %q is given twice", key)
		}
		seen[key] = true
		switch key {
		case "default":
			return parseBudgetObject(dec, key, &out.Default)
		case "max":
			return parseBudgetObject(dec, key, &out.Max)
		}
		return fmt.Errorf("unknown field %q (want \"default\" and \"max\")", key)
	})
	if err != nil {
		return Budgets{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Budgets{}, errors.New("trailing data after the JSON object")
	}
	if _, _, err := actor.OperatorBudgets(out.Default, out.Max); err != nil {
		return Budgets{}, err
	}
	return out, nil
}

// parseBudgetObject reads the budget object at dec into b.
func parseBudgetObject(dec *json.Decoder, which string, b *actor.Budget) error {
	seen := map[string]bool{}
	if t, err := dec.Token(); err != nil {
		return fmt.Errorf("%q: %w", which, err)
	} else if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("%q must be a budget object", which)
	}
	return eachFieldIn(dec, which, func(key string) error {
		at := which + "." + key
		if seen[key] {
			return fmt.Errorf("field %q is given twice", at)
		}
		seen[key] = true
		if key == "network" {
			var s string
			if err := decodeField(dec, which, key, "string", &s); err != nil {
				return err
			}
			if n := actor.Network(s); !n.Valid() {
				return fmt.Errorf("%q is %q: want \"none\", \"loopback\" or \"host\"", at, s)
			}
			b.Network = actor.Network(s)
			return nil
		}
		known := false
		for _, f := range budgetFileFields {
			known = known || f == key
		}
		if !known {
			return fmt.Errorf("unknown field %q (want %s)", at, strings.Join(budgetFileFields, ", "))
		}
		var v int64
		if err := decodeField(dec, which, key, "positive integer", &v); err != nil {
			return err
		}
		if v < 1 {
			return fmt.Errorf("%q must be a positive integer, not %d", at, v)
		}
		setBudgetField(b, key, v)
		return nil
	})
}

// setBudgetField sets the integer field named key (one of budgetFileFields).
func setBudgetField(b *actor.Budget, key string, v int64) {
	msec := time.Duration(min(v, int64(1<<63-1)/int64(time.Millisecond))) * time.Millisecond
	switch key {
	case "idle_ttl_ms":
		b.IdleTTL = msec
	case "max_duration_ms":
		b.MaxDuration = msec
	case "max_processes":
		b.MaxProcesses = int(min(v, 1<<31-1))
	case "max_exec_timeout_ms":
		b.MaxExecTimeout = msec
	case "output_buffer_bytes":
		b.OutputBufferBytes = int(min(v, 1<<31-1))
	case "memory_bytes":
		b.MemoryBytes = v
	case "pids":
		b.Pids = int(min(v, 1<<31-1))
	case "cpu_millis":
		b.CPUMillis = int(min(v, 1<<31-1))
	case "disk_bytes":
		b.DiskBytes = v
	}
}
