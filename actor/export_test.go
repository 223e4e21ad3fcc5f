package actor

import "time"

func nowMono() time.Time            { return time.Now() }
func sinceMono(t time.Time) float64 { return time.Since(t).Seconds() }
