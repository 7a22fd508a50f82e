// Package migrations embeds the classifier's numbered SQL migrations.
package migrations

import "embed"

// FS holds NNN_name.up.sql and NNN_name.down.sql files.
//
//go:embed *.sql
var FS embed.FS
