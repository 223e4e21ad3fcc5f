// Package actor owns the actor system (mailbox, activation, passivation, alarms, durable
// storage) and the sandbox actor (budgets, lifecycle, event log, messages). It may import
// runtime and nothing else of ours.
package actor
