// Package report renders the reports of polygraph's commands: the verify report
// (model.Report) as text, JSON, JUnit or markdown, and the policy report (policy.Report) as
// text, JSON, SARIF or GitHub annotations, one file per format.
package report
