package opsapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/north-cloud/classifier/internal/poller"
	"github.com/north-cloud/infrastructure/httpserver"
)

// pollStatusResponse is the body of GET /sources/poll-status.
type pollStatusResponse struct {
	// Indices are the raw indices matching the poll pattern, by name.
	Indices []poller.IndexStatus `json:"indices"`
	// Failing counts the indices the poller skips for now.
	Failing int `json:"failing"`
}

// pollStatus answers this replica's view of each raw index: whether the
// poller skips it, why, since when and until when.
func (h *handler) pollStatus(c *gin.Context) {
	if h.PollStatus == nil {
		httpserver.WriteError(c, http.StatusServiceUnavailable, httpserver.CodeUnavailable, "this classifier runs no poller")
		return
	}
	resp := pollStatusResponse{Indices: h.PollStatus()}
	if resp.Indices == nil {
		resp.Indices = []poller.IndexStatus{}
	}
	for _, s := range resp.Indices {
		if s.Failing {
			resp.Failing++
		}
	}
	c.JSON(http.StatusOK, resp)
}
