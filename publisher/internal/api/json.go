package api

import (
	"encoding/json"

	"github.com/gin-gonic/gin"
)

// jsonDecoder refuses unknown fields, so a misspelt filter is a 400 rather
// than a re-queue of every failed row.
func jsonDecoder(c *gin.Context) *json.Decoder {
	dec := json.NewDecoder(c.Request.Body)
	dec.DisallowUnknownFields()
	return dec
}
