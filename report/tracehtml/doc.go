// Package tracehtml writes the HTML report of `bringup trace`.
package tracehtml
