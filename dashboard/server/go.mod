module github.com/north-cloud/dashboard-server

go 1.26.0
