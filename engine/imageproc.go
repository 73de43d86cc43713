package engine

import "hearth/media"

// imageProcessor turns a decoded picture into the pixel values the
// model's vision tower takes, as the checkpoint's Hugging Face processor
// does (media.ImageProcessor).
type imageProcessor interface {
	Image(media.Image) (media.Pixels, error)
}

// loadImageProcessor reads the image processor a checkpoint ships
// (processor_config.json's "image_processor", or
// preprocessor_config.json). Tests replace it.
var loadImageProcessor = func(dir string) (imageProcessor, error) {
	p, err := media.LoadImageProcessor(dir)
	if err != nil {
		return nil, err
	}
	return p, nil
}
