// Package report renders polygraph's results: the verify report and the diagnosis (text, JSON
// and a self-contained HTML page).
package report
