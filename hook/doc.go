// Package hook answers Auto Scaling lifecycle actions: it decodes a lifecycle event in any
// shape Auto Scaling delivers, verifies the launching instance, and completes the action with
// exactly one CONTINUE or ABANDON. `polygraph hook`, `polygraph hook serve` and the Lambda
// function only move events into Handler.Handle.
package hook
