import Foundation

/// Chooses the file name for a download from the response headers and the URL.
enum SuggestedName {
    /// A safe, non-empty name: Content-Disposition, else the URL's last segment, else a fallback.
    static func make(contentDisposition: String?, url: String, contentType: String?) -> String {
        if let header = contentDisposition,
           let raw = ContentDisposition.filename(from: header),
           let safe = SafeName.sanitize(raw) {
            return safe
        }
        if let raw = URLName.lastSegment(of: url), let safe = SafeName.sanitize(raw) {
            return safe
        }
        // Directory-like URLs and HTML responses are saved the way browsers and wget do.
        if URLName.pathIsDirectory(url) || isHTML(contentType) { return "index.html" }
        return "download"
    }

    /// True when the media type (parameters ignored, case-insensitive) is text/html.
    private static func isHTML(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "text/html"
    }
}
