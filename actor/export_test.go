package actor

import (
	"os"
	"time"
)

func nowMono() time.Time            { return time.Now() }
func sinceMono(t time.Time) float64 { return time.Since(t).Seconds() }

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }
